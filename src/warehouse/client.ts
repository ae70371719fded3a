import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { toWarehouseError } from './errors.js';
import type { Answers, Statement, StatementKind, Statements, WarehouseRow } from './types.js';

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

/** How each kind of statement runs on a client (a missing kind is a compile error). */
const KINDS: { readonly [K in StatementKind]: (client: ClickHouseClient, statement: Statement) => Promise<Answers[K]> } = {
  query: async (client, { sql, params, settings, signal }) => {
    const result = await client.query({ query: `${sql}${settingsClause(settings)}`, format: 'JSONEachRow', query_params: { ...params }, abort_signal: signal });
    return result.json<WarehouseRow>();
  },
  // The JSON format carries the engine's statistics after the rows, on the embedded engine and on a server alike.
  measure: async (client, { sql, params, settings, signal }) => {
    const result = await client.query({ query: `${sql}${settingsClause(settings)}`, format: 'JSON', query_params: { ...params }, abort_signal: signal });
    const body = await result.json<WarehouseRow>();
    // Counts of 64 bits may come as text (output_format_json_quote_64bit_integers).
    const s = body.statistics as { elapsed?: number | string; rows_read?: number | string; bytes_read?: number | string } | undefined;
    return { rows: body.data, statistics: { elapsed: Number(s?.elapsed ?? 0), rows_read: Number(s?.rows_read ?? 0), bytes_read: Number(s?.bytes_read ?? 0) } };
  },
  // exec sends the text as it is (query() would add a FORMAT clause, which the explained statement
  // would take as its own); the answer's format is a setting, never in the text: the engine's own for
  // chDB, a URL parameter for a server.
  explain: async (client, { sql, params, signal }) => {
    const { stream } = await client.exec({ query: `EXPLAIN AST ${sql}`, query_params: { ...params }, clickhouse_settings: { default_format: 'JSONEachRow' }, abort_signal: signal });
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
    const rows = Buffer.concat(chunks).toString('utf8').split('\n').filter((line) => line !== '');
    return rows.map((row) => String((JSON.parse(row) as { explain?: unknown }).explain ?? ''));
  },
  command: async (client, { sql, params, settings, signal }) => {
    await client.command({ query: `${sql}${settingsClause(settings)}`, query_params: { ...params }, abort_signal: signal });
    return undefined;
  },
};

/** Statements on a client, what the embedded engine and a server share: each failure a savedq error. */
export function clientRun(client: ClickHouseClient, location: string): Statements['run'] {
  return <K extends StatementKind>(kind: K, statement: Statement) => classified(location, () => (KINDS[kind] as (c: ClickHouseClient, s: Statement) => Promise<Answers[K]>)(client, statement));
}
