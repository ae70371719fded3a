import { InputError } from '../errors.js';
import { nodeCrypto } from '../lazy.js';
import { parseJson } from '../json.js';
import type { TableField } from '../output/types.js';
import type { CallTags } from '../queries/run.js';
import type { Row, SavedQuery } from '../queries/types.js';
import { microsFromDate } from '../time.js';
import type { ChunkStream, StreamFormat } from '../warehouse/types.js';
import type { Warehouse } from '../warehouse/types.js';
import { callTime } from './call.js';
import type { PreparedCall } from './prepare.js';
import { fieldsOf } from './runner.js';

// `savedq export` and serve's export route (CONTRACT §19): a call's whole answer, past its row cap,
// streamed from the warehouse to the output as the warehouse sends it, never cached. The call comes
// through the same door as a run (prepared: its parameters, its caller's grant, its SQL checked); the
// binary formats are the engine's own writers', NDJSON and CSV are written as `run` writes them.

/** What an export is written as, and how each is named to a reader. */
export const EXPORT_FORMATS = {
  ndjson: { engine: 'JSONEachRow', mediaType: 'application/x-ndjson', extension: 'ndjson', binary: false },
  csv: { engine: 'JSONEachRow', mediaType: 'text/csv; charset=utf-8', extension: 'csv', binary: false },
  parquet: { engine: 'Parquet', mediaType: 'application/vnd.apache.parquet', extension: 'parquet', binary: true },
  arrow: { engine: 'ArrowStream', mediaType: 'application/vnd.apache.arrow.stream', extension: 'arrows', binary: true },
} as const satisfies Record<string, { engine: StreamFormat; mediaType: string; extension: string; binary: boolean }>;

export type ExportFormat = keyof typeof EXPORT_FORMATS;
export const EXPORT_FORMAT_NAMES = Object.keys(EXPORT_FORMATS) as ExportFormat[];

/** An export format by its name, or the error naming the ones there are. */
export function exportFormat(name: string): ExportFormat {
  if (Object.hasOwn(EXPORT_FORMATS, name)) return name as ExportFormat;
  throw new InputError(`invalid export format ${JSON.stringify(name)}: one of ${EXPORT_FORMAT_NAMES.join(', ')}.`);
}

/** How an export is asked for besides its call. */
export interface ExportOptions {
  readonly format: ExportFormat;
  /** Aborted when the caller stops (Ctrl-C, a client gone): the query is stopped. */
  readonly signal?: AbortSignal | undefined;
  readonly tags?: CallTags | undefined;
  /** NDJSON and CSV: the text goes to a terminal (control characters shown as escapes, as `run` does). */
  readonly terminal?: boolean | undefined;
  /** CSV: text as it is, formulas included. */
  readonly csvRaw?: boolean | undefined;
  /**
   * The file made for the export (`-o`'s partial): a warehouse that writes an answer into a file itself
   * (the embedded engine's Parquet and Arrow) writes it there, sparing a copy of every byte.
   */
  readonly file?: string | undefined;
}

/** How far an export has got. */
export interface ExportProgress {
  /** Rows written (a server's Parquet and Arrow do not say theirs: undefined). */
  readonly rows: number | undefined;
  readonly bytes: number;
}

/** An export under way: its bytes as they come, and how far it has got. */
export interface Export {
  readonly query: SavedQuery;
  readonly format: ExportFormat;
  /** The bytes in order; a failure after the first is thrown by the iteration. Leaving early stops the query. */
  readonly bytes: AsyncIterable<Uint8Array>;
  progress(): ExportProgress;
}

/** What an export needs besides its call and the warehouse: the clock, and the limits of time and of a caller's SQL. */
export interface ExportParts {
  readonly clock: () => number;
  readonly timeoutSeconds: number;
  readonly sandboxMaxMemoryBytes: number;
}

/**
 * Starts an export of a prepared call, its definition checked (calls/execute.ts): the query streamed
 * within the call's one deadline (call.ts: its own timeout, or --timeout), which also ends an export
 * whose output waits too long (a slow reader) and a server that stops sending. Resolves once the first
 * part is read, so a query the engine refuses fails here, before any byte; a failure later is the
 * iteration's.
 */
export async function startExport(warehouse: Warehouse, parts: ExportParts, call: PreparedCall, options: ExportOptions): Promise<Export> {
  const { exportQuery, jsonFieldsOf } = await import('../queries/run.js');
  const time = callTime(call, parts.timeoutSeconds, options.signal);
  const { signal } = time;
  /** A failure as the caller reads it: the reason it was stopped for (Ctrl-C, the time limit), or the warehouse's; a time limit named. */
  const why = (err: unknown): unknown => time.passed(signal.aborted ? signal.reason : err, warehouse.location);
  let stream: ChunkStream;
  try {
    stream = await exportQuery(warehouse, call.query, call.params, {
      now: call.at ?? microsFromDate(parts.clock()),
      timeoutSeconds: time.seconds,
      signal,
      deadline: time.deadline,
      sql: call.sql,
      sandboxMaxMemoryBytes: parts.sandboxMaxMemoryBytes,
      // An export that came with no request id (a command's) is given one of its own, as a run is.
      tags: { ...options.tags, requestId: options.tags?.requestId ?? nodeCrypto().randomUUID() },
      format: EXPORT_FORMATS[options.format].engine,
      file: options.file,
    });
  } catch (err) {
    time.end();
    throw why(err);
  }
  let rows: number | undefined = 0;
  let bytes = 0;
  const jsonFields = jsonFieldsOf(call.query);
  // NDJSON whose values are all the engine's own (no JSON text given as an object) to a file or a pipe
  // is the engine's JSONEachRow as it is, written as run writes it (EXPORT_FORMAT_SETTINGS): passed
  // through, its lines counted. Otherwise the rows are read and rendered by run's renderers.
  const passThrough = options.format === 'ndjson' && options.terminal !== true && jsonFields.length === 0;
  const text = EXPORT_FORMATS[options.format].engine === 'JSONEachRow' && !passThrough ? await textWriter(call, options, jsonFields) : undefined;
  async function* written(): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of stream) {
        if (text) {
          const out = text.write(chunk.bytes);
          rows = (rows ?? 0) + out.rows;
          bytes += out.bytes.length;
          if (out.bytes.length > 0) yield out.bytes;
          continue;
        }
        const counted = chunk.rows ?? (passThrough ? linesIn(chunk.bytes) : undefined);
        rows = rows === undefined || counted === undefined ? undefined : rows + counted;
        bytes += chunk.bytes.length + (chunk.inFile ?? 0);
        if (chunk.bytes.length > 0) yield chunk.bytes;
      }
      signal.throwIfAborted();
      const last = text?.end();
      if (last && last.length > 0) {
        bytes += last.length;
        yield last;
      }
    } catch (err) {
      throw why(err);
    } finally {
      time.end();
    }
  }
  return { query: call.query, format: options.format, bytes: written(), progress: () => ({ rows, bytes }) };
}

/** NDJSON or CSV written from the engine's JSONEachRow parts, a row at a time, as `run` writes them. */
interface TextWriter {
  write(part: Uint8Array): { bytes: Buffer; rows: number };
  /** What is left at the end: a CSV's header, when there were no rows. */
  end(): Buffer;
}

/**
 * The writer of an export's text formats: the engine's lines (a server's parts may end inside one, kept
 * for the next) read as rows, their JSON-text fields given as values, then rendered by `run`'s own
 * renderers, a CSV's header once.
 */
async function textWriter(call: PreparedCall, options: ExportOptions, jsonFields: readonly string[]): Promise<TextWriter> {
  const [{ textRenderer, fieldsOfRows }, { parseJsonField }] = await Promise.all([import('../output/index.js'), import('../queries/run.js')]);
  const renderer = await textRenderer(options.format === 'csv' ? 'csv' : 'ndjson');
  let rest: Buffer = Buffer.alloc(0);
  // The declared fields, in order; none declared (or your own SQL's answer): the first rows' columns.
  const declared = fieldsOf(call);
  let fields: readonly TableField[] | undefined = declared.length > 0 ? declared : undefined;
  let headed = false;
  const rendered = (rows: readonly Row[]): Buffer => {
    const text = [...renderer(rows, { fields: fields ?? [], color: false, width: undefined, csvRaw: options.csvRaw, terminal: options.terminal, header: !headed })].join('');
    headed = true;
    return Buffer.from(text);
  };
  return {
    write(part) {
      const all = rest.length === 0 ? Buffer.from(part.buffer, part.byteOffset, part.byteLength) : Buffer.concat([rest, part]);
      const end = all.lastIndexOf(0x0a);
      // A part that ends inside a line (a server's): its start kept for the next (copied: the part's memory is not ours to keep).
      rest = Buffer.from(all.subarray(end + 1));
      if (end < 0) return { bytes: Buffer.alloc(0), rows: 0 };
      const rows = all.toString('utf8', 0, end).split('\n').map((line) => {
        const row = parseJson(line) as Row;
        for (const name of jsonFields) if (name in row) row[name] = parseJsonField(row[name]);
        return row;
      });
      // Your own SQL's columns are its answer's.
      fields ??= fieldsOfRows(rows);
      return { bytes: rendered(rows), rows: rows.length };
    },
    end() {
      return options.format === 'csv' && !headed ? rendered([]) : Buffer.alloc(0);
    },
  };
}

/** Line feeds in bytes: the rows of NDJSON. */
function linesIn(bytes: Uint8Array): number {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let n = 0;
  for (let at = buffer.indexOf(0x0a); at !== -1; at = buffer.indexOf(0x0a, at + 1)) n += 1;
  return n;
}
