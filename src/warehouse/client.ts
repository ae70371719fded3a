import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { toWarehouseError } from './errors.js';
import type { Warehouse, WarehouseRow } from './types.js';

/** Settings every query runs with: ISO timestamps, and 64-bit counts as JSON numbers. */
export const BASE_SETTINGS: ClickHouseSettings = {
  date_time_output_format: 'iso',
  output_format_json_quote_64bit_integers: 0,
};

/** Text as a ClickHouse string literal. */
export function quoteText(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * Per-statement settings as a SETTINGS clause. The embedded engine applies `clickhouse_settings` as
 * session-wide SET statements that outlive the statement (a `readonly` would then refuse the next
 * insert); a SETTINGS clause holds for its one statement, on the embedded engine and on a server alike.
 */
export function settingsClause(settings: ClickHouseSettings | undefined): string {
  const entries = Object.entries(settings ?? {}).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return '';
  const values = entries.map(([k, v]) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Error(`invalid setting name ${k}`);
    // Numbers (the client types 64-bit settings as strings) go bare; anything else is a quoted literal.
    const text = String(v);
    return `${k} = ${/^\d+(\.\d+)?$/.test(text) ? text : quoteText(text)}`;
  });
  return `\nSETTINGS ${values.join(', ')}`;
}

/** Runs an operation of the client, any failure classified as a savedq error. */
export async function classified<T>(location: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw toWarehouseError(err, location);
  }
}

/** Queries and commands on a client: what the embedded engine and a server share. */
export function clientStatements(client: ClickHouseClient, location: string): Pick<Warehouse, 'query' | 'command' | 'explainAst'> & Required<Pick<Warehouse, 'measure'>> {
  return {
    // exec sends the text as it is (query() would add a FORMAT clause, which the explained statement
    // would take as its own).
    explainAst: (statement, params) =>
      classified(location, async () => {
        // The answer's format as a setting, never in the text: the engine's own for chDB, a URL parameter for a server.
        const { stream } = await client.exec({ query: `EXPLAIN AST ${statement}`, query_params: { ...params }, clickhouse_settings: { default_format: 'JSONEachRow' } });
        const chunks: Buffer[] = [];
        for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
        const rows = Buffer.concat(chunks).toString('utf8').split('\n').filter((line) => line !== '');
        return rows.map((row) => String((JSON.parse(row) as { explain?: unknown }).explain ?? ''));
      }),
    query: (sql, params, settings, signal) =>
      classified(location, async () => {
        const result = await client.query({
          query: `${sql}${settingsClause(settings)}`,
          format: 'JSONEachRow',
          query_params: { ...params },
          abort_signal: signal,
        });
        return result.json<WarehouseRow>();
      }),
    // The JSON format carries the engine's statistics after the rows, on the embedded engine and on a server alike.
    measure: (sql, params, settings, signal) =>
      classified(location, async () => {
        const result = await client.query({ query: `${sql}${settingsClause(settings)}`, format: 'JSON', query_params: { ...params }, abort_signal: signal });
        const body = await result.json<WarehouseRow>();
        // Counts of 64 bits may come as text (output_format_json_quote_64bit_integers).
        const s = body.statistics as { elapsed?: number | string; rows_read?: number | string; bytes_read?: number | string } | undefined;
        return { rows: body.data, statistics: { elapsed: Number(s?.elapsed ?? 0), rows_read: Number(s?.rows_read ?? 0), bytes_read: Number(s?.bytes_read ?? 0) } };
      }),
    command: (sql, params, settings) =>
      classified(location, async () => {
        await client.command({ query: `${sql}${settingsClause(settings)}`, query_params: { ...params } });
      }),
  };
}
