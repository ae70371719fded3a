import { stringify } from 'csv-stringify/sync';
import type { Row } from '../queries/types.js';
import type { RenderOptions } from './index.js';

/** RFC 4180: a header row, CRLF line ends, quoting as needed; nested values as JSON text in their cell. */
export function renderCsv(rows: readonly Row[], options: RenderOptions): string {
  const columns = options.fields.map((f) => f.name);
  return stringify(rows as Row[], {
    header: true,
    columns,
    record_delimiter: '\r\n',
    cast: { object: (value) => JSON.stringify(value), boolean: (value) => String(value) },
  });
}
