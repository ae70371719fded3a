import { stringify } from 'csv-stringify/sync';
import { jsonText } from '../json.js';
import type { Row } from '../queries/types.js';
import { inBatches, visible, type RenderOptions } from './types.js';

/**
 * RFC 4180: a header row, CRLF line ends, a field quoted when it holds the delimiter, a quote, a CR or a
 * LF (csv-stringify quotes one holding the record delimiter, CRLF, but not a lone LF or CR: hence
 * quoted_match); nested values as JSON text in their cell. A text cell a spreadsheet would take for a
 * formula (=, +, -, @, a tab or a carriage return first) is written with a leading ' (csv-stringify's
 * escape_formulas), unless csvRaw; numbers never. On a terminal a value's control characters are shown
 * as escapes, as a table shows them.
 */
export function* renderCsv(rows: readonly Row[], options: RenderOptions): Generator<string> {
  const columns = options.fields.map((f) => f.name);
  const text = options.terminal === true ? visible : (value: string) => value;
  let header = options.header !== false;
  for (const batch of inBatches(rows)) {
    yield stringify(batch as Row[], {
      header,
      columns: options.terminal === true ? options.fields.map((f) => ({ key: f.name, header: visible(f.name) })) : columns,
      record_delimiter: '\r\n',
      quoted_match: /[\r\n]/,
      escape_formulas: options.csvRaw !== true,
      cast: { object: (value) => text(jsonText(value)), boolean: (value) => String(value), string: (value) => text(value) },
    });
    header = false;
  }
  if (header) yield stringify([], { header: true, columns, record_delimiter: '\r\n', quoted_match: /[\r\n]/ });
}
