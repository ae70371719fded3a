import { stringify } from 'csv-stringify/sync';
import type { Row } from '../queries/types.js';
import { inBatches, type RenderOptions } from './types.js';

/**
 * RFC 4180: a header row, CRLF line ends, quoting as needed; nested values as JSON text in their cell.
 * A text cell a spreadsheet would take for a formula (=, +, -, @, a tab or a carriage return first) is
 * written with a leading ' (csv-stringify's escape_formulas), unless csvRaw; numbers never.
 */
export function* renderCsv(rows: readonly Row[], options: RenderOptions): Generator<string> {
  const columns = options.fields.map((f) => f.name);
  let header = true;
  for (const batch of inBatches(rows)) {
    yield stringify(batch as Row[], {
      header,
      columns,
      record_delimiter: '\r\n',
      escape_formulas: options.csvRaw !== true,
      cast: { object: (value) => JSON.stringify(value), boolean: (value) => String(value) },
    });
    header = false;
  }
  if (header) yield stringify([], { header: true, columns, record_delimiter: '\r\n' });
}
