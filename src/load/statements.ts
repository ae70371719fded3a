import type { ClickHouseSettings } from '@clickhouse/client';
import { readSqlFile } from '../package.js';
import type { LinesFormat } from '../warehouse/index.js';

/** A batch's lines read in a format with a structure, as the table function a statement reads. */
export type LinesSource = (format: LinesFormat, structure: string) => string;

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
 * turns their constant regular expressions into per-row ones, compiled again for each row.
 */
export const EAGER: ClickHouseSettings = { ...JSON_READING, short_circuit_function_evaluation: 'disable' };

/** Settings that make the strict path read lines in order on one thread, so line numbers are exact. */
export const IN_ORDER: ClickHouseSettings = { ...EAGER, max_threads: 1, input_format_parallel_parsing: 0 };

/**
 * Settings of a batch's insert: one insert thread and no early flush make the batch one block, so each
 * of its partitions is written as one part, whole or not at all (which the marks rely on). Into a
 * cluster's Distributed table, the insert returns once the shards have the rows, so a batch loaded
 * again sees them.
 */
export function insertSettings(computed: readonly ComputedColumn[]): ClickHouseSettings {
  return {
    ...EAGER,
    ...(computed.length > 0 ? { insert_allow_materialized_columns: 1 } : {}),
    insert_distributed_sync: 1,
    max_insert_threads: '1',
    min_insert_block_size_rows: '1000000000000',
    min_insert_block_size_bytes: '1000000000000',
  };
}

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
export function rules(read: LinesSource, strict: boolean): string {
  rulesSql ??= readSqlFile('load.sql');
  return rulesSql.replace('FROM $events', () => `FROM ${eventSource(read, strict)}`);
}

/** A MATERIALIZED column of a log table: its name and the expression that computes it. */
export interface ComputedColumn {
  readonly name: string;
  readonly expression: string;
}

/** The column of the log tables that holds the mark of the load batch a row came in (sql/schema.sql). */
export const MARK_COLUMN = 'load_batch';

/**
 * The insert of a batch's rows that `where` admits, each with the batch's mark, and only in the
 * partitions that hold none of the batch's rows yet: so a batch loaded again (after a load killed
 * midway, or the same input twice) stores exactly the partitions not stored before. With computed
 * columns the insert computes them itself, in the parallel part of the statement; otherwise the table
 * does, in its single-threaded write of the batch.
 */
export function insertInto(table: string, rows: string, where: string, computed: readonly ComputedColumn[], partitionKey: string): string {
  const names = ['id', 'timestamp', 'project', 'event_message', 'metadata', ...computed.map((c) => c.name), MARK_COLUMN];
  const values = ['id', 'timestamp', 'project', 'event_message', 'metadata', ...computed.map((c) => c.expression), '{load_batch:UInt64}'];
  const stored = `SELECT DISTINCT ${partitionKey} FROM ${table} WHERE ${MARK_COLUMN} = {load_batch:UInt64}`;
  return `INSERT INTO ${table} (${names.join(', ')})\nSELECT ${values.join(', ')} FROM (${rows}) WHERE ${where} AND (${partitionKey}) NOT IN (${stored})`;
}
