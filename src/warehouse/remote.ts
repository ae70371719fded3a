import { Readable } from 'node:stream';
import type { ClickHouseClient } from '@clickhouse/client';
import { redactUrl } from '../config.js';
import { WarehouseError } from '../errors.js';
import { BASE_SETTINGS, classified, clientRun, quoteText, settingsClause } from './client.js';
import type { Statements, WarehouseRow } from './types.js';

/** Bytes as a ClickHouse string literal in plain ASCII: exact whatever the bytes, valid UTF-8 or not. */
export function bytesLiteral(bytes: Buffer): string {
  const escaped = bytes
    .toString('latin1')
    // Anything but printable ASCII, and the quote and backslash, as \xNN.
    .replace(/[^\x20-\x26\x28-\x5b\x5d-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `'${escaped}'`;
}

/** A ClickHouse server (or cluster) by URL, which may carry user, password and database. */
export async function openServer(url: string, timeoutSeconds: number): Promise<Statements> {
  const { createClient, ClickHouseLogLevel } = await import('@clickhouse/client');
  const location = `ClickHouse at ${redactUrl(url)}`;
  let client: ClickHouseClient;
  try {
    client = createClient({
      url,
      clickhouse_settings: BASE_SETTINGS,
      // The server enforces max_execution_time; this bounds a server that stops answering at all.
      request_timeout: (timeoutSeconds + 5) * 1000,
      // Errors reach the caller as savedq errors; the client's own logging would print them twice.
      log: { level: ClickHouseLogLevel.OFF },
    });
  } catch (err) {
    throw new WarehouseError(`invalid ClickHouse URL ${redactUrl(url)}.`, { cause: err });
  }
  return {
    location,
    embedded: false,
    run: clientRun(client, location),
    // A batch travels as the insert's body; a query of it (rare: naming refused lines) carries it as a literal.
    async stage(lines) {
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
              clickhouse_settings: { max_query_size: String(4 * lines.length + 65_536) },
            });
            return result.json<WarehouseRow>();
          }),
        release: async () => undefined,
      };
    },
    close: () => client.close(),
  };
}
