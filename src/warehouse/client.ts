import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { parseJson } from '../json.js';
import { cutOff, toWarehouseError } from './errors.js';
import { loadClient } from './load-client.js';
import { plainEachRow, plainRows } from './plain.js';
import { failingAs, firstRead } from './streams.js';
import type { Answers, Statement, StatementKind, Statements, StreamChunk, WarehouseRow } from './types.js';

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

/** What a statement sends beside its text: its parameters, and what a server's request carries (hosts.ts). */
function request({ params, signal, queryId, headers, requestSettings }: Statement) {
  return {
    query_params: { ...params },
    abort_signal: signal,
    ...(queryId !== undefined ? { query_id: queryId } : {}),
    ...(headers !== undefined ? { http_headers: { ...headers } } : {}),
    ...(requestSettings !== undefined ? { clickhouse_settings: requestSettings } : {}),
  };
}

/**
 * An answer's text read as JSON (a row a line for JSONEachRow). A server that fails a query after its
 * first rows has already said 200, and writes the error at the end of the answer: plainly (`Code: N.
 * DB::Exception: …`), or from ClickHouse 25.11 framed by the tag in X-ClickHouse-Exception-Tag. Such an
 * answer is never rows: the engine's error is thrown, as the client's parseError reads it.
 */
async function answerOf<T>(result: { text(): Promise<string>; response_headers: Record<string, string | string[] | undefined> }, parse: (text: string) => T): Promise<T> {
  const text = await result.text();
  try {
    return parse(text);
  } catch (err) {
    const { parseError, extractErrorAtTheEndOfChunk, EXCEPTION_TAG_HEADER_NAME } = await loadClient();
    // (The embedded engine's answers have no headers.)
    const tag = (result.response_headers as Partial<typeof result.response_headers> | undefined)?.[EXCEPTION_TAG_HEADER_NAME];
    if (typeof tag === 'string' && text.includes(`__exception__\r\n${tag}`)) throw extractErrorAtTheEndOfChunk(Buffer.from(text), tag);
    const at = text.search(/Code: \d+\. DB::Exception: [^\n]*\n?$/);
    if (at >= 0) throw parseError(text.slice(at).trim());
    throw new Error(`the answer was not JSON (${err instanceof Error ? err.message : String(err)})`, { cause: err });
  }
}

/** The bytes at the end of a streamed answer searched for an error written there (a message is short). */
const TAIL_BYTES = 64 * 1024;

/**
 * A server's streamed answer, its parts as they come but one behind: the last part is given only once
 * the answer has ended without an error written at its end (answerOf's two forms), so that no error
 * text is ever passed on as rows. The error is thrown instead, after the parts before it.
 */
async function* withoutTrailingError(stream: AsyncIterable<unknown>, headers: Record<string, string | string[] | undefined> | undefined): AsyncGenerator<StreamChunk> {
  let held: Buffer | undefined;
  for await (const part of stream) {
    if (held !== undefined) yield { bytes: held };
    held = Buffer.from(part as Uint8Array);
  }
  if (held === undefined) return;
  const tail = held.subarray(Math.max(0, held.length - TAIL_BYTES)).toString('latin1');
  const { parseError, extractErrorAtTheEndOfChunk, EXCEPTION_TAG_HEADER_NAME } = await loadClient();
  const tag = headers?.[EXCEPTION_TAG_HEADER_NAME];
  if (typeof tag === 'string' && tail.includes(`__exception__\r\n${tag}`)) throw extractErrorAtTheEndOfChunk(held, tag);
  const at = tail.search(/Code: \d+\. DB::Exception: [^\n]*\n?$/);
  if (at >= 0) throw parseError(tail.slice(at).trim());
  yield { bytes: held };
}

/** JSONEachRow's rows. */
function eachRow(text: string): WarehouseRow[] {
  return text.split('\n').filter((line) => line !== '').map((line) => parseJson(line) as WarehouseRow);
}

/** A query's rows and statistics in FORMAT JSON, its values read back by the types it gives (a user that may set nothing: plain.ts). */
async function plainMeasure(client: ClickHouseClient, statement: Statement, timezone: string): Promise<Answers['measure']> {
  const result = await client.query({ ...request(statement), query: statement.sql, format: 'JSON' });
  const body = await answerOf(result, (text) => parseJson(text) as { meta?: { name: string; type: string }[]; data: WarehouseRow[]; statistics?: Record<string, number | string> });
  const s = body.statistics;
  return { rows: plainRows(body, timezone), statistics: { elapsed: Number(s?.elapsed ?? 0), rows_read: Number(s?.rows_read ?? 0), bytes_read: Number(s?.bytes_read ?? 0) } };
}

/** How each kind of statement runs on a client (a missing kind is a compile error). */
const KINDS: { readonly [K in StatementKind]: (client: ClickHouseClient, statement: Statement) => Promise<Answers[K]> } = {
  query: async (client, statement) => {
    if (statement.plain) return (await plainMeasure(client, statement, statement.plain.timezone)).rows;
    const result = await client.query({ ...request(statement), query: `${statement.sql}${settingsClause(statement.settings)}`, format: 'JSONEachRow' });
    return answerOf(result, eachRow);
  },
  // The JSON format carries the engine's statistics after the rows, on the embedded engine and on a server alike.
  measure: async (client, statement) => {
    if (statement.plain) return plainMeasure(client, statement, statement.plain.timezone);
    const result = await client.query({ ...request(statement), query: `${statement.sql}${settingsClause(statement.settings)}`, format: 'JSON' });
    // A 64-bit integer past 2^53 is a bigint of every digit (json.ts).
    const body = await answerOf(result, (text) => parseJson(text) as { data: WarehouseRow[]; statistics?: unknown });
    // Counts of 64 bits may come as text (output_format_json_quote_64bit_integers).
    const s = body.statistics as { elapsed?: number | string; rows_read?: number | string; bytes_read?: number | string } | undefined;
    return { rows: body.data, statistics: { elapsed: Number(s?.elapsed ?? 0), rows_read: Number(s?.rows_read ?? 0), bytes_read: Number(s?.bytes_read ?? 0) } };
  },
  // exec sends the text as it is (query() would add a FORMAT clause, which the explained statement
  // would take as its own); the answer's format is a setting, never in the text: the engine's own for
  // chDB, a URL parameter for a server.
  explain: async (client, statement) => {
    // A user that may set no format: the parse read as a table (EXPLAIN as a subquery), in the query's format.
    if (statement.plain) {
      const result = await client.query({ ...request(statement), query: `SELECT explain FROM (EXPLAIN AST\n${statement.sql}\n)`, format: 'JSONEachRow' });
      return (await answerOf(result, eachRow)).map((row) => String((row as { explain?: unknown }).explain ?? ''));
    }
    const r = request(statement);
    const { stream } = await client.exec({ ...r, query: `EXPLAIN AST ${statement.sql}`, clickhouse_settings: { ...r.clickhouse_settings, default_format: 'JSONEachRow' } });
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
    return eachRow(Buffer.concat(chunks).toString('utf8')).map((row) => String((row as { explain?: unknown }).explain ?? ''));
  },
  command: async (client, statement) => {
    await client.command({ ...request(statement), query: `${statement.sql}${settingsClause(statement.settings)}` });
    return undefined;
  },
  // A server's answer as it sends it, in the format asked for by a setting of the request (as
  // explain's). The embedded engine streams with its own reader instead (embedded.ts): its client
  // connection reads an answer whole.
  stream: async (client, statement) => {
    const r = request(statement);
    if (statement.plain) {
      // A user that may set no format: the format in the text, with the types to read each value back by.
      const { stream, response_headers } = await client.exec({ ...r, query: `${statement.sql}\nFORMAT JSONCompactEachRowWithNamesAndTypes` });
      return firstRead(plainEachRow(withoutTrailingError(stream as AsyncIterable<unknown>, response_headers), statement.plain.timezone)[Symbol.asyncIterator]());
    }
    const { stream, response_headers } = await client.exec({
      ...r,
      query: `${statement.sql}${settingsClause(statement.settings)}`,
      clickhouse_settings: { ...r.clickhouse_settings, default_format: (statement.format ?? 'JSONEachRow') as ClickHouseSettings['default_format'] },
    });
    return firstRead(withoutTrailingError(stream as AsyncIterable<unknown>, response_headers)[Symbol.asyncIterator]());
  },
};

/** Statements on a client, what the embedded engine and a server share: each failure a savedq error. */
export function clientRun(client: ClickHouseClient, location: string): Statements['run'] {
  return async <K extends StatementKind>(kind: K, statement: Statement) => {
    const answer = await classified(location, () => (KINDS[kind] as (c: ClickHouseClient, s: Statement) => Promise<Answers[K]>)(client, statement));
    // A streamed answer can fail after its first part too: classified the same way, a connection lost
    // then being the answer cut off (the host was reached).
    return kind === 'stream' ? (failingAs(answer as Answers['stream'], (err) => cutOff(err, location)) as Answers[K]) : answer;
  };
}
