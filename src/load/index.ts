import type { Warehouse } from '../warehouse/index.js';
import type { TableName } from '../warehouse/schema.js';
import { batchMark, fileBatches, lineBatches, surveyLines } from './batches.js';
import { storeBatch } from './batch.js';
import { readTableShape } from './tables.js';
import type { LoadInput, LoadOptions, LoadReport } from './types.js';

export type { FileInput, LoadInput, LoadOptions, LoadReport, RejectedLine } from './types.js';

/** Large enough that what each insert costs fades, small enough that a load's memory stays bounded (three batches are held). */
export const DEFAULT_BATCH_BYTES = 32 << 20;
/**
 * Batches handed to the engine at once. The engine runs one statement at a time, so the second only
 * waits its turn, and meanwhile the one after is read.
 */
const IN_FLIGHT = 2;

/**
 * Loads newline-delimited JSON events into a table. The input is cut into batches of whole lines that
 * go to the engine as they are: the engine parses and checks them (sql/load.sql), one statement at a
 * time, with up to two batches handed to it while the next is read; at most those three are held.
 * Batches are cut by content, and each stores only the partitions that hold none of its rows yet, so
 * loading the same input again (after an interrupted load, say) stores every row once. The warehouse
 * may still be opening: the first batch is read meanwhile.
 */
export async function loadEvents(
  warehouse: Warehouse | PromiseLike<Warehouse>,
  table: TableName,
  input: LoadInput,
  options: LoadOptions = {},
): Promise<LoadReport> {
  const report: LoadReport = { loaded: 0, already: 0, rejected: 0, lines: 0, rechecked: 0 };
  // A warehouse that fails to open fails the load, when the first batch needs it or at the end.
  const opened = Promise.resolve(warehouse);
  opened.catch(() => undefined);
  // The table is asked about (and made, if missing) once, before the first batch goes in.
  const into = options.into ?? table;
  const shape = opened.then((w) => readTableShape(w, table, into));
  shape.catch(() => undefined);
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
    const events = survey.lines - survey.blank;
    const batch = { lines, mark: batchMark(table, lines), events, shaped: survey.shaped };
    const outcome = Promise.all([opened, shape]).then(async ([w, s]) => {
      const staged = await w.stage(lines);
      try {
        return await storeBatch({ table, into }, batch, staged, s);
      } finally {
        await staged.release();
      }
    });
    counted = Promise.all([counted, outcome]).then(([, { rejected, already, rechecked }]) => {
      for (const { line, reason } of rejected) options.onReject?.(firstLine + line, reason);
      report.rejected += rejected.length;
      report.already += already;
      report.loaded += events - rejected.length - already;
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
