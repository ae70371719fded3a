import type { StagedLines } from '../warehouse/index.js';
import { isRefusal, isUnknownTable } from '../warehouse/errors.js';
import type { TableName } from '../warehouse/schema.js';
import { IN_ORDER, insertInto, insertSettings, MARK_COLUMN, rules } from './statements.js';
import type { TableShape } from './tables.js';
import type { Batch, BatchOutcome } from './types.js';

/** Which log table's rules a batch is read by, and the table its rows go into (the same, but for the sample's). */
export interface LoadTarget {
  readonly table: TableName;
  readonly into: string;
}

/**
 * Stores one batch: usually one fast insert, which refuses the whole batch if any line is bad; then the
 * strict path names the refused lines, in order, and stores the good ones. Either way only the
 * partitions that hold none of the batch's rows yet are written (see insertInto), so storing a batch
 * again, whole or half stored, stores each of its rows once.
 */
export async function storeBatch(target: LoadTarget, batch: Batch, staged: StagedLines, shape: TableShape): Promise<BatchOutcome> {
  // What an earlier load of these lines stored (found by the mark's bloom filter): the same file loaded
  // again stores nothing, and says so.
  const storedBefore = Number((await staged.query(`SELECT count() AS n FROM ${target.into} WHERE ${MARK_COLUMN} = {load_batch:UInt64}`, { load_batch: batch.mark }, {}))[0]?.n ?? 0);
  const outcome = await storeLines(target, batch, staged, shape);
  return { ...outcome, already: Math.min(storedBefore, batch.events - outcome.rejected.length) };
}

async function storeLines(target: LoadTarget, batch: Batch, staged: StagedLines, shape: TableShape): Promise<Omit<BatchOutcome, 'already'>> {
  const params = { project_from_metadata: target.table === 'function_edge_logs', events: batch.events, load_batch: batch.mark };
  const settings = insertSettings(shape.computed);
  const insert = (rows: string, where: string) => insertInto(target.into, rows, where, shape.computed, shape.partitionKey);
  const read = (use: 'insert' | 'query') => staged.source.bind(staged, use);
  if (batch.shaped) {
    try {
      // Anything unclear (a NULL included) stops the insert rather than dropping a row unseen.
      const check = "coalesce(reason != '' OR suspect OR row_index >= {events:UInt64}, 1)";
      await staged.insert(insert(rules(read('insert'), false), `throwIf(${check}, 'savedq: a line needs a closer look') = 0`), 'JSONEachRow', params, settings);
      return { rejected: [], rechecked: false };
    } catch (err) {
      // A refused line, or one the JSON reader could not take: the strict path explains. Anything else
      // (a missing table, a full disk, a lost server) is no business of the strict path.
      if (!isRefusal(err) || isUnknownTable(err)) throw err;
    }
  }
  const rejects = await staged.query(
    `SELECT line_number, reason FROM (${rules(read('query'), true)}) WHERE NOT blank AND reason != '' ORDER BY line_number`,
    params,
    IN_ORDER,
  );
  if (rejects.length < batch.events) {
    await staged.insert(insert(rules(read('insert'), true), "NOT blank AND reason = ''"), 'LineAsString', params, settings);
  }
  return { rejected: rejects.map((r) => ({ line: Number(r.line_number), reason: String(r.reason) })), rechecked: true };
}
