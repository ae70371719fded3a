import { createHash, randomUUID } from 'node:crypto';
import { clickHouseInstant, parseEventTimestamp } from '../time.js';
import type { TableName, Warehouse } from './index.js';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Why an event cannot be loaded, for the "line N: …" message. */
export class RejectedEvent extends Error {}

/**
 * Checks one event and shapes it as a JSONEachRow line of `table`; throws RejectedEvent with the reason.
 * `metadata` goes as a JSON object that the engine stores as text (input_format_json_read_objects_as_strings);
 * the typed columns are derived from it by the engine.
 */
export function toTableLine(table: TableName, event: unknown): string {
  if (!isObject(event)) throw new RejectedEvent('not a JSON object');
  const instant = parseEventTimestamp(event.timestamp);
  if (instant === undefined) {
    throw new RejectedEvent(
      event.timestamp === undefined
        ? 'missing timestamp'
        : 'invalid timestamp: expected ISO 8601 text or integer microseconds since the epoch',
    );
  }
  let id = event.id;
  if (id === undefined || id === null) id = randomUUID();
  else if (typeof id !== 'string' || !UUID_PATTERN.test(id)) throw new RejectedEvent('invalid id: expected a UUID');
  let metadata: unknown = event.metadata ?? {};
  // JSON text of an object is accepted too: that is how the tables export it.
  if (typeof metadata === 'string') metadata = parseObject(metadata);
  if (!isObject(metadata)) throw new RejectedEvent('invalid metadata: expected an object');
  const message = event.event_message ?? '';
  if (typeof message !== 'string') throw new RejectedEvent('invalid event_message: expected a string');
  const project = table === 'function_edge_logs' ? metadata.project_ref : event.project;
  if (typeof project !== 'string' || project === '') {
    throw new RejectedEvent(
      table === 'function_edge_logs' ? 'missing metadata.project_ref' : 'missing project',
    );
  }
  return (
    `{"id":"${id as string}","timestamp":"${clickHouseInstant(instant)}","project":${JSON.stringify(project)},` +
    `"event_message":${JSON.stringify(message)},"metadata":${JSON.stringify(metadata)}}`
  );
}

/** What a load did. */
export interface LoadReport {
  loaded: number;
  rejected: number;
  /** Lines read, blank ones included. */
  lines: number;
}

export interface LoadOptions {
  /** Rows per insert. */
  readonly batchRows?: number;
  /** Called for each rejected line with its number (1-based) and the reason. */
  readonly onReject?: (line: number, reason: string) => void;
  /** Called after each batch is stored. */
  readonly onProgress?: (report: LoadReport) => void;
  /** When aborted, the load stops before its next batch and throws the abort reason. */
  readonly signal?: AbortSignal | undefined;
}

const DEFAULT_BATCH_ROWS = 25_000;

/**
 * Loads newline-delimited JSON events into a table, batch by batch: while the engine stores one batch,
 * the next is read and checked, and never more than those two are held. Each batch carries a
 * deduplication token derived from its content, so loading the same file again (say, after an
 * interrupted load) stores every row once.
 */
export async function loadEvents(
  warehouse: Warehouse,
  table: TableName,
  lines: AsyncIterable<string> | Iterable<string>,
  options: LoadOptions = {},
): Promise<LoadReport> {
  const batchRows = options.batchRows ?? DEFAULT_BATCH_ROWS;
  const report: LoadReport = { loaded: 0, rejected: 0, lines: 0 };
  let batch: string[] = [];
  // The token hashes the input lines, not the rows made of them: generated ids differ on every run.
  let digest = createHash('sha256').update(table);
  let storing: Promise<void> | undefined;

  const flush = async (): Promise<void> => {
    await storing;
    storing = undefined;
    if (batch.length === 0) return;
    const body = batch.join('\n');
    const rows = batch.length;
    batch = [];
    const token = `savedq-${digest.digest('hex')}`;
    digest = createHash('sha256').update(table);
    storing = warehouse
      .insert(table, body, { insert_deduplication_token: token, input_format_json_read_objects_as_strings: 1 })
      .then(() => {
        report.loaded += rows;
        options.onProgress?.(report);
      });
    // Reported when awaited (the next flush, or the end); keep Node from calling it unhandled meanwhile.
    storing.catch(() => undefined);
  };

  try {
    for await (const line of lines) {
      if (options.signal?.aborted) throw options.signal.reason;
      report.lines += 1;
      if (line.trim() === '') continue;
      let row: string;
      try {
        row = toTableLine(table, JSON.parse(line));
      } catch (err) {
        report.rejected += 1;
        const reason = err instanceof RejectedEvent ? err.message : 'not valid JSON';
        options.onReject?.(report.lines, reason);
        continue;
      }
      batch.push(row);
      digest.update(line).update('\n');
      if (batch.length >= batchRows) await flush();
    }
    await flush();
  } finally {
    // Never leave the engine in the middle of an insert, whatever happened here.
    await storing?.catch(() => undefined);
  }
  await storing;
  return report;
}
