import { createHash, randomUUID } from 'node:crypto';
import { read } from 'node:fs';
import { promisify } from 'node:util';
import type { ClickHouseSettings } from '@clickhouse/client';
import { readSqlFile } from '../package.js';
import { InputError } from '../errors.js';
import type { TableName, Warehouse, WarehouseRow } from './index.js';

/** A line `load` refused: its number within the batch (1-based) and why. */
export interface RejectedLine {
  readonly line: number;
  readonly reason: string;
}

/** What a load did. */
export interface LoadReport {
  loaded: number;
  rejected: number;
  /** Lines read, blank ones included. */
  lines: number;
  /** Batches read a second time, line by line, because the fast path refused them. */
  rechecked: number;
}

/** What became of one batch. */
export interface BatchOutcome {
  readonly rejected: RejectedLine[];
  /** Whether the batch went through the strict, line-by-line path. */
  readonly rechecked: boolean;
}

export interface LoadOptions {
  /** Input bytes per insert (the batch ends at the first line end past this many bytes). */
  readonly batchBytes?: number;
  /** Called for each rejected line with its number (1-based) and the reason. */
  readonly onReject?: (line: number, reason: string) => void;
  /** Called after each batch is stored, with the input bytes consumed so far. */
  readonly onProgress?: (report: LoadReport, bytes: number) => void;
  /** When aborted, the load stops before its next batch and throws the abort reason. */
  readonly signal?: AbortSignal | undefined;
}

/** 32 MiB: large enough that per-insert costs fade, small enough that a load peaks near 700–800 MB. */
export const DEFAULT_BATCH_BYTES = 32 << 20;
/**
 * Batches handed to the engine at once. The engine runs one statement at a time, so the second only
 * waits its turn, and meanwhile the one after is read and hashed. (One or three were no faster.)
 */
const IN_FLIGHT = 2;
/** A line longer than this (no newline in sight) is refused rather than held in memory. */
const MAX_LINE_BYTES = 64 << 20;
/** Bytes read from a file at a time. */
const READ_BYTES = 4 << 20;
const NEWLINE = 0x0a;

/**
 * The event's fields as the fast path reads them: as text. A number arrives as its digits (so a
 * timestamp of microseconds takes the fast path too); booleans and arrays where text is expected stop
 * the fast path. Text that could have been a number or an object is left to the strict path, which
 * knows each value's JSON type (a project given as a number is not a project).
 */
const FAST_STRUCTURE =
  'id Nullable(String), timestamp Nullable(String), project Nullable(String), event_message Nullable(String), metadata Nullable(String)';
/** The event's fields as the strict path reads them, each with its JSON type. */
const STRICT_STRUCTURE = 'id Dynamic, timestamp Dynamic, project Dynamic, event_message Dynamic, metadata Nullable(String)';

/** Settings of the JSON readers: objects and numbers as their text, strings never guessed to be dates. */
const JSON_READING: ClickHouseSettings = {
  input_format_json_read_objects_as_strings: 1,
  input_format_json_read_numbers_as_strings: 1,
  input_format_json_read_bools_as_strings: 0,
  input_format_json_read_arrays_as_strings: 0,
  input_format_try_infer_dates: 0,
  input_format_try_infer_datetimes: 0,
  input_format_skip_unknown_fields: 1,
};

/** Text the fast path cannot take at its word: it may have been an object or a number in the JSON. */
const AMBIGUOUS = (field: string): string =>
  `match(ifNull(${field}, ''), '^(\\{|-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?$)')`;

/**
 * Evaluate every branch of the rules for every row. They are cheap and never throw; lazy evaluation
 * turns their constant regular expressions into per-row ones, compiled again for each row (20x slower).
 */
const EAGER: ClickHouseSettings = { ...JSON_READING, short_circuit_function_evaluation: 'disable' };

/** Settings that make the strict path read lines in order on one thread, so line numbers are exact. */
const IN_ORDER: ClickHouseSettings = { ...EAGER, max_threads: 1, input_format_parallel_parsing: 0 };

/** A batch's lines read in a format with a structure, as a table function call (`file(…)`, `input(…)`, `format(…)`). */
export type LinesSource = (format: 'JSONEachRow' | 'LineAsString', structure: string) => string;

/**
 * The events of a batch for sql/load.sql, read two ways. Fast: the engine's JSON reader, in parallel,
 * one row per object. Strict: one row per line, each checked as strict JSON and numbered; used to
 * explain a batch the fast path refused, and to store its good lines.
 */
function eventSource(read: LinesSource, strict: boolean): string {
  if (!strict) {
    return `(SELECT 0 AS line_number, 0 AS blank, 0 AS not_json, 0 AS not_object, rowNumberInAllBlocks() AS row_index,
      ${AMBIGUOUS('id')} OR ${AMBIGUOUS('project')} OR ${AMBIGUOUS('event_message')} AS suspect,
      id AS in_id, timestamp::Dynamic AS in_timestamp, project AS in_project, event_message AS in_message, 0 AS message_not_text,
      metadata AS in_metadata
    FROM ${read('JSONEachRow', FAST_STRUCTURE)})`;
  }
  const text = (field: string): string => `if(dynamicType(e.${field}) = 'String', dynamicElement(e.${field}, 'String'), NULL)`;
  return `(SELECT line_number, blank, NOT isValidJSON(line) AS not_json, NOT not_json AND JSONType(line) != 'Object' AS not_object,
      0 AS row_index, 0 AS suspect,
      if(dynamicType(e.id) = 'None', NULL, ifNull(${text('id')}, '')) AS in_id, e.timestamp AS in_timestamp,
      ${text('project')} AS in_project, ${text('event_message')} AS in_message,
      dynamicType(e.event_message) NOT IN ('None', 'String') AS message_not_text, e.metadata AS in_metadata
    FROM (SELECT line, rowNumberInAllBlocks() + 1 AS line_number, match(line, '^[ \\t\\r]*$') AS blank,
        JSONExtract(line, 'Tuple(${STRICT_STRUCTURE})') AS e
      FROM ${read('LineAsString', 'line String')}))`;
}

let rulesSql: string | undefined;

/** sql/load.sql over a batch's events (read once per process, not per statement). */
function rules(read: LinesSource, strict: boolean): string {
  rulesSql ??= readSqlFile('load.sql');
  return rulesSql.replace('FROM $events', () => `FROM ${eventSource(read, strict)}`);
}

/** A MATERIALIZED column of a log table: its name and the expression that computes it. */
export interface ComputedColumn {
  readonly name: string;
  readonly expression: string;
}

/**
 * The insert of a batch's rows. With computed columns, the insert computes them itself, in the
 * parallel part of the statement; otherwise the table does, in its single-threaded write of the batch.
 * With marking, each row carries the batch's mark.
 */
function insertInto(table: TableName, rows: string, where: string, source: BatchSource): string {
  const names = ['id', 'timestamp', 'project', 'event_message', 'metadata', ...source.computed.map((c) => c.name)];
  const values = ['id', 'timestamp', 'project', 'event_message', 'metadata', ...source.computed.map((c) => c.expression)];
  if (source.marking) {
    names.push(MARK_COLUMN);
    values.push('{load_batch:UInt64}');
  }
  return `INSERT INTO ${table} (${names.join(', ')})\nSELECT ${values.join(', ')} FROM (${rows}) WHERE ${where}`;
}

/** The column of the embedded engine's log tables that holds the mark of the load batch a row came in. */
export const MARK_COLUMN = 'load_batch';

/**
 * How the embedded engine finishes a batch that a killed load was storing. Each row carries its
 * batch's mark (MARK_COLUMN), and the engine stores each of a batch's partitions as one part, whole or
 * not at all.
 */
export interface BatchMarking {
  /** The table's partition key expression. */
  readonly partitionKey: string;
  /** Whether a load that died was storing this batch: some of its partitions may be stored, some not. */
  readonly unfinished: boolean;
}

/**
 * Settings of a batch's insert. The token makes a repeated batch (a re-run after an interrupted load) a
 * no-op; one insert thread and no early flush make the batch exactly one block, so the token covers
 * all of it whichever way the engine splits the work.
 */
function insertSettings(token: string, computed: readonly ComputedColumn[]): ClickHouseSettings {
  return {
    ...(computed.length > 0 ? { insert_allow_materialized_columns: 1 } : {}),
    insert_deduplication_token: token,
    max_insert_threads: '1',
    min_insert_block_size_rows: '1000000000000',
    min_insert_block_size_bytes: '1000000000000',
  };
}

/** How one batch reaches the engine, and how statements run on it. */
export interface BatchSource {
  /** The batch's lines for an insert statement, and for a query (they may differ: a server's insert reads its body). */
  readonly forInsert: LinesSource;
  readonly forQuery: LinesSource;
  readonly params: Record<string, unknown>;
  /**
   * The table's MATERIALIZED columns, for the insert to compute as it reads the batch (about 15 %
   * faster on the embedded engine), or none to leave them to the table.
   */
  readonly computed: readonly ComputedColumn[];
  /** Marks on the rows, and whether the batch is unfinished (embedded engine); none on a server. */
  readonly marking?: BatchMarking | undefined;
  insert(statement: string, format: 'JSONEachRow' | 'LineAsString', params: Record<string, unknown>, settings: ClickHouseSettings): Promise<void>;
  query(statement: string, params: Record<string, unknown>, settings: ClickHouseSettings): Promise<WarehouseRow[]>;
}

/** A batch as `loadEvents` hands it to the warehouse. */
export interface Batch {
  readonly lines: Buffer;
  readonly token: string;
  /** The batch's mark on its rows (a UInt64, as text): the first 64 bits of the token's digest. */
  readonly mark: string;
  /** Lines that are not blank: the rows the batch makes when every line is good. */
  readonly events: number;
  /** Whether every non-blank line looks like one object (starts with `{`, ends with `}`). */
  readonly shaped: boolean;
}

/**
 * Stores one batch. Usually one fast insert that refuses the whole batch if any line is bad; then the
 * strict path lists the refused lines, in order, and stores the good ones under the same token.
 *
 * A batch a killed load was storing is finished instead. Its partitions already stored are whole and
 * stay; the others are stored now: first under the batch's token, which stores those the engine never
 * recorded, then under a token of their own, which stores any the engine did record but lost. (The
 * engine records a part's token just before it commits the part; a process killed in between leaves
 * the record without the part, and the batch's token would skip it for good.)
 */
export async function loadBatch(table: TableName, batch: Batch, source: BatchSource): Promise<BatchOutcome> {
  if (!source.marking?.unfinished) return storeBatch(table, batch, source, batch.token, '1');
  const key = source.marking.partitionKey;
  const missing = `(${key}) NOT IN (SELECT DISTINCT ${key} FROM ${table} WHERE ${MARK_COLUMN} = {load_batch:UInt64})`;
  const outcome = await storeBatch(table, batch, source, batch.token, missing);
  await storeBatch(table, batch, source, `${batch.token}-${randomUUID()}`, missing);
  return outcome;
}

/** Stores the rows of a batch that `also` admits, under a deduplication token. */
async function storeBatch(table: TableName, batch: Batch, source: BatchSource, token: string, also: string): Promise<BatchOutcome> {
  const params = {
    ...source.params,
    project_from_metadata: table === 'function_edge_logs',
    events: batch.events,
    load_batch: batch.mark,
  };
  const settings = { ...EAGER, ...insertSettings(token, source.computed) };
  if (batch.shaped) {
    try {
      const rows = rules(source.forInsert, false);
      // Anything unclear (a NULL included) stops the insert rather than dropping a row unseen.
      const check = "coalesce(reason != '' OR suspect OR row_index >= {events:UInt64}, 1)";
      const where = `throwIf(${check}, 'savedq: a line needs a closer look') = 0 AND ${also}`;
      await source.insert(insertInto(table, rows, where, source), 'JSONEachRow', params, settings);
      return { rejected: [], rechecked: false };
    } catch (err) {
      // A refused line, or one the JSON reader could not take: the strict path explains. Anything else
      // (a missing table, a full disk, a lost server) is no business of the strict path.
      if (!isAboutTheData(err)) throw err;
    }
  }
  const rejects = await source.query(
    `SELECT line_number, reason FROM (${rules(source.forQuery, true)}) WHERE NOT blank AND reason != '' ORDER BY line_number`,
    params,
    IN_ORDER,
  );
  if (rejects.length < batch.events) {
    const rows = rules(source.forInsert, true);
    await source.insert(insertInto(table, rows, `NOT blank AND reason = '' AND ${also}`, source), 'LineAsString', params, settings);
  }
  return { rejected: rejects.map((r) => ({ line: Number(r.line_number), reason: String(r.reason) })), rechecked: true };
}

/** Engine errors that say nothing about the lines: no table, no disk, no memory, no time, no access. */
const NOT_ABOUT_DATA = new Set([60, 81, 159, 192, 193, 194, 209, 210, 241, 243, 252, 394, 516]);

/** Whether an insert failed over what the lines hold (a refused line, JSON the reader could not take). */
function isAboutTheData(err: unknown): boolean {
  for (let e = err as { code?: unknown; clickhouseCode?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    const code = Number(e.clickhouseCode ?? e.code);
    if (Number.isInteger(code) && code > 0) return !NOT_ABOUT_DATA.has(code);
  }
  return false;
}

/**
 * Cuts a byte stream into batches of whole lines: each ends at the first newline at or past
 * `batchBytes` from its start. The cut depends only on the content, never on how the stream happened
 * to be chunked, so the same input always gives the same batches (and the same deduplication tokens).
 */
export async function* lineBatches(
  source: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  batchBytes: number,
): AsyncGenerator<Buffer> {
  let parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (;;) {
      const newline = size + buf.length >= batchBytes ? buf.indexOf(NEWLINE, Math.max(0, batchBytes - 1 - size)) : -1;
      if (newline === -1) break;
      parts.push(buf.subarray(0, newline + 1));
      yield Buffer.concat(parts);
      parts = [];
      size = 0;
      buf = buf.subarray(newline + 1);
    }
    if (buf.length > 0) {
      parts.push(buf);
      size += buf.length;
      if (size > batchBytes + MAX_LINE_BYTES) throw new InputError(`a line is longer than ${MAX_LINE_BYTES >> 20} MiB.`);
    }
  }
  if (size > 0) yield Buffer.concat(parts);
}

/** An open regular file to load: read straight into reused buffers rather than through a stream. */
export interface FileInput {
  readonly kind: 'file';
  readonly fd: number;
}

/** What `loadEvents` reads: pieces of the input as they come (a stream, say), or an open file. */
export type LoadInput = AsyncIterable<Buffer | string> | Iterable<Buffer | string> | FileInput;

const readAt = promisify(read);

/**
 * Cuts an open file into exactly the batches `lineBatches` makes of the same bytes, reading straight
 * into `slots` buffers used in turn: allocating a batch afresh and copying it together cost a 278 MB
 * load 200 ms (page faults, mostly). `free(slot)` settles once the batch last read into that buffer
 * is done with.
 */
export async function* fileBatches(
  fd: number,
  batchBytes: number,
  slots: number,
  free: (slot: number) => Promise<unknown>,
  readBytes = READ_BYTES,
): AsyncGenerator<{ lines: Buffer; slot: number }> {
  const buffers: Buffer[] = [];
  let carry: Buffer = Buffer.alloc(0); // read past the last cut: the start of the next batch
  let position = 0;
  let eof = false;
  for (let n = 0; !eof || carry.length > 0; n++) {
    const slot = n % slots;
    await free(slot);
    let buffer = buffers[slot];
    if (buffer === undefined || buffer.length < carry.length + readBytes) {
      buffer = buffers[slot] = Buffer.allocUnsafeSlow(Math.max(batchBytes, carry.length) + readBytes);
    }
    let length = carry.copy(buffer);
    let searched = 0;
    let cut = -1;
    for (;;) {
      if (length >= batchBytes) {
        cut = buffer.subarray(0, length).indexOf(NEWLINE, Math.max(searched, batchBytes - 1));
        searched = length;
        if (cut !== -1 || eof) break;
      } else if (eof) {
        break;
      }
      if (length === buffer.length) {
        if (length > batchBytes + MAX_LINE_BYTES) throw new InputError(`a line is longer than ${MAX_LINE_BYTES >> 20} MiB.`);
        const larger = Buffer.allocUnsafeSlow(Math.min(2 * length, batchBytes + MAX_LINE_BYTES + readBytes));
        buffer.copy(larger, 0, 0, length);
        buffer = buffers[slot] = larger;
      }
      const { bytesRead } = await readAt(fd, buffer, length, Math.min(readBytes, buffer.length - length), position);
      position += bytesRead;
      length += bytesRead;
      eof = bytesRead === 0;
    }
    const end = cut === -1 ? length : cut + 1;
    // The buffer is not read into again until its slot comes round: the carry can stay a view of it.
    carry = buffer.subarray(end, length);
    if (end > 0) yield { lines: buffer.subarray(0, end), slot };
  }
}

const isSpace = (byte: number | undefined): boolean => byte === 0x20 || byte === 0x09 || byte === 0x0d;

/**
 * Counts a batch's lines and its blank ones (spaces, tabs and carriage returns only, as sql/load.sql
 * says), and tells whether every other line starts with `{` and ends with `}`.
 */
export function surveyLines(lines: Buffer): { lines: number; blank: number; shaped: boolean } {
  let count = 0;
  let blank = 0;
  let shaped = true;
  let start = 0;
  while (start < lines.length) {
    let end = lines.indexOf(NEWLINE, start);
    if (end === -1) end = lines.length;
    count += 1;
    let first = start;
    while (first < end && isSpace(lines[first])) first += 1;
    if (first === end) {
      blank += 1;
    } else if (shaped) {
      let last = end - 1;
      while (isSpace(lines[last])) last -= 1;
      shaped = lines[first] === 0x7b && lines[last] === 0x7d;
    }
    start = end + 1;
  }
  return { lines: count, blank, shaped };
}

/**
 * A batch's deduplication token and the mark its rows carry, both from a digest of its bytes (and of
 * the table's name), so the same lines always get the same ones.
 */
export function batchIdentity(table: TableName, lines: Buffer): { token: string; mark: string } {
  const digest = createHash('sha256').update(table).update('\0').update(lines).digest('hex');
  return { token: `savedq-${digest}`, mark: BigInt(`0x${digest.slice(0, 16)}`).toString() };
}

/**
 * Loads newline-delimited JSON events into a table. The input is cut into batches of whole lines that
 * go to the engine as they are: the engine parses and checks them (sql/load.sql), one statement at a
 * time, with up to two batches handed to it while the next is read; at most those three are held. Each
 * batch carries a deduplication token derived from its bytes, so loading the same input again (say,
 * after an interrupted load) stores every row once. The warehouse may still be opening: the first
 * batch is read meanwhile.
 */
export async function loadEvents(
  warehouse: Warehouse | PromiseLike<Warehouse>,
  table: TableName,
  input: LoadInput,
  options: LoadOptions = {},
): Promise<LoadReport> {
  const report: LoadReport = { loaded: 0, rejected: 0, lines: 0, rechecked: 0 };
  // A warehouse that fails to open fails the load, when the first batch needs it or at the end.
  const opened = Promise.resolve(warehouse);
  opened.catch(() => undefined);
  const batchBytes = options.batchBytes ?? DEFAULT_BATCH_BYTES;
  let bytes = 0;
  // Batches in the engine, oldest first: when the engine is done with each, and when its outcome is
  // counted (in input order).
  const inFlight: { done: Promise<unknown>; counted: Promise<void> }[] = [];
  let counted: Promise<void> = Promise.resolve();
  // For a file: when the batch last read into each buffer is done with.
  const slots: Promise<unknown>[] = [];
  const batches =
    'kind' in input
      ? fileBatches(input.fd, batchBytes, IN_FLIGHT + 1, (slot) => slots[slot] ?? Promise.resolve())
      : withoutSlots(lineBatches(input, batchBytes));

  const store = (lines: Buffer): { done: Promise<unknown>; counted: Promise<void> } => {
    const firstLine = report.lines;
    const survey = surveyLines(lines);
    report.lines += survey.lines;
    const { token, mark } = batchIdentity(table, lines);
    const events = survey.lines - survey.blank;
    const outcome = opened.then((w) => w.loadLines(table, { lines, token, mark, events, shaped: survey.shaped }));
    counted = Promise.all([counted, outcome]).then(([, { rejected, rechecked }]) => {
      for (const { line, reason } of rejected) options.onReject?.(firstLine + line, reason);
      report.rejected += rejected.length;
      report.loaded += events - rejected.length;
      if (rechecked) report.rechecked += 1;
      bytes += lines.length;
      options.onProgress?.(report, bytes);
    });
    // Reported when awaited (below); keep Node from calling it unhandled meanwhile.
    counted.catch(() => undefined);
    return { done: outcome.catch(() => undefined), counted };
  };

  try {
    for await (const { lines, slot } of batches) {
      if (inFlight.length >= IN_FLIGHT) {
        await inFlight[0]?.counted;
        inFlight.shift();
      }
      if (options.signal?.aborted) throw options.signal.reason;
      const stored = store(lines);
      if (slot !== undefined) slots[slot] = stored.done;
      inFlight.push(stored);
    }
    for (const stored of inFlight) await stored.counted;
    await opened;
  } finally {
    // Never leave the engine in the middle of an insert, whatever happened here.
    await Promise.all(inFlight.map((stored) => stored.done));
  }
  return report;
}

/** Batches that own their memory: no buffer slot to wait for. */
async function* withoutSlots(batches: AsyncIterable<Buffer>): AsyncGenerator<{ lines: Buffer; slot?: number }> {
  for await (const lines of batches) yield { lines };
}
