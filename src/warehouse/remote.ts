import { Readable } from 'node:stream';
import type { ClickHouseClient } from '@clickhouse/client';
import { BASE_SETTINGS, classified, quoteText, settingsClause } from './client.js';
import type { StagedLines, WarehouseRow } from './types.js';

/** Bytes as a ClickHouse string literal in plain ASCII: exact whatever the bytes, valid UTF-8 or not. */
export function bytesLiteral(bytes: Buffer): string {
  const escaped = bytes
    .toString('latin1')
    // Anything but printable ASCII, and the quote and backslash, as \xNN.
    .replace(/[^\x20-\x26\x28-\x5b\x5d-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `'${escaped}'`;
}

/** A batch of lines staged for one host of a server: the body of its insert, or a literal in a query. */
export function stageOnServer(client: ClickHouseClient, location: string, lines: Buffer): StagedLines {
  return {
    source: (use, format, structure) => (use === 'insert' ? `input(${quoteText(structure)})` : `format(${format}, ${bytesLiteral(lines)})`),
    insert: (statement, format, params, settings) =>
      classified(location, async () => {
        const r = await client.exec({
          query: `${statement}${settingsClause(settings)}\nFORMAT ${format}`,
          query_params: { ...params },
          values: Readable.from([lines]),
        });
        r.stream.destroy();
      }),
    query: (statement, params, settings) =>
      classified(location, async () => {
        const result = await client.query({
          query: `${statement}${settingsClause(settings)}`,
          format: 'JSONEachRow',
          query_params: { ...params },
          // The literal is part of the query text, which the server parses only up to this size.
          clickhouse_settings: { ...BASE_SETTINGS, max_query_size: String(4 * lines.length + 65_536) },
        });
        return result.json<WarehouseRow>();
      }),
    release: async () => undefined,
  };
}
