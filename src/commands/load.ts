import { closeSync, createReadStream, fstatSync, openSync } from 'node:fs';
import { resolveBatchBytes } from '../config.js';
import { errnoText } from '../errno.js';
import { InputError } from '../errors.js';
import type { Savedq } from '../library.js';
import type { LoadInput, LoadReport } from '../load/index.js';
import { sampleSize } from '../load/sample.js';
import { TABLES, type TableName } from '../warehouse/schema.js';
import { plural } from '../words.js';
import { report, type CommonOptions, type Io } from './io.js';
import { loadProgressText, progress } from './progress.js';

/** Options of `savedq load`. */
export interface LoadOptions extends CommonOptions {
  readonly table?: string | undefined;
  /** A file of NDJSON events; `-` or absent reads standard input. */
  readonly file?: string | undefined;
  /** Generate sample events instead of reading any. */
  readonly sample?: boolean | undefined;
  /** Input megabytes per insert (text, as given on the command line). */
  readonly batchMb?: string | undefined;
  /** With `sample`: delete the sample a table holds and load it anew. */
  readonly replace?: boolean | undefined;
}

/** How many rejected lines are named one by one before only counting them. */
const NAMED_REJECTS = 20;

function checkTable(table: string | undefined): TableName {
  if (table === undefined) throw new InputError(`missing table: one of ${TABLES.join(', ')} (or --sample).`);
  if (!(TABLES as readonly string[]).includes(table)) {
    throw new InputError(`unknown table ${JSON.stringify(table)}: one of ${TABLES.join(', ')}.`);
  }
  return table as TableName;
}

/** Where events are read from; for a file, also its size. */
interface Input {
  readonly source: LoadInput;
  readonly size?: number;
  close(): void;
  /** Ends a read under way with this error (a file is read in batches that check for an interrupt). */
  interrupt(reason: unknown): void;
}

/**
 * Opens the input now, so that a missing, unreadable or wrong file is an input error before the engine
 * is even started.
 */
function openInput(file: string | undefined, io: Io): Input {
  if (file === undefined || file === '-') {
    if (file === undefined && io.stdin.isTTY) {
      throw new InputError('no input: give a file, - to read standard input, or --sample.');
    }
    return { source: io.stdin, close: () => io.stdin.destroy(), interrupt: (reason) => io.stdin.destroy(asError(reason)) };
  }
  try {
    const fd = openSync(file, 'r');
    const stat = fstatSync(fd);
    if (stat.isDirectory()) {
      closeSync(fd);
      throw Object.assign(new Error('EISDIR'), { code: 'EISDIR' });
    }
    if (stat.isFile()) return { source: { kind: 'file', fd }, size: stat.size, close: () => closeSync(fd), interrupt: () => undefined };
    // A named pipe, say: read as a stream, which waits for data rather than taking none as the end.
    const stream = createReadStream('', { fd, highWaterMark: 1 << 20 });
    return { source: stream, close: () => stream.destroy(), interrupt: (reason) => stream.destroy(asError(reason)) };
  } catch (err) {
    throw new InputError(`cannot read ${file}: ${errnoText(err)}.`);
  }
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}

/** `savedq load`: loads NDJSON events into a table, or sample events into both. Returns what it did. */
export async function loadCommand(lib: Savedq, options: LoadOptions, io: Io): Promise<LoadReport[]> {
  const bytesPerBatch = resolveBatchBytes(options.batchMb);
  if (options.sample) {
    if (options.file !== undefined) throw new InputError('--sample takes no file.');
    const tables = options.table === undefined ? TABLES : [checkTable(options.table)];
    let shown: ReturnType<typeof progress> | undefined;
    let loading: { table: TableName; started: number } | undefined;
    const reports = await lib
      .loadSample(tables, {
        batchBytes: bytesPerBatch,
        signal: options.signal,
        replace: options.replace === true,
        onProgress: (table, p) => {
          if (loading?.table !== table) {
            shown?.done();
            shown = progress(io, options);
            loading = { table, started: Date.now() };
          }
          shown?.update(loadProgressText(table, p.loaded, undefined, loading.started, p.loaded / sampleSize(table)));
        },
      })
      .finally(() => shown?.done());
    for (const r of reports) {
      if (r.present > 0) {
        report(io, options, `${r.table} holds the sample already (${r.present} rows): nothing loaded; --replace loads it anew, as of now`);
      } else {
        report(io, options, `${options.replace ? 'replaced the sample: ' : ''}loaded ${r.loaded} sample rows into ${r.table}`);
      }
    }
    await lib.announce('load');
    return reports;
  }

  if (options.replace) throw new InputError('--replace goes with --sample: it loads the sample anew (events of your own are never deleted).');
  const table = checkTable(options.table);
  const input = openInput(options.file, io);
  // A stream waiting for data (a quiet pipe) ends on an interrupt: the load stops at once, the batches
  // already sent finish storing.
  const stop = () => input.interrupt(options.signal?.reason);
  options.signal?.addEventListener('abort', stop, { once: true });
  let r: LoadReport;
  try {
    const shown = progress(io, options);
    const started = Date.now();
    let named = 0;
    r = await lib.load(table, input.source, {
      batchBytes: bytesPerBatch,
      signal: options.signal,
      onReject: (line, reason) => {
        if (named++ < NAMED_REJECTS) {
          shown.done();
          report(io, options, `line ${line}: ${reason}`);
        }
      },
      onProgress: (p, bytes) => shown.update(loadProgressText(table, p.loaded, bytes, started, input.size ? bytes / input.size : undefined)),
    }).finally(() => shown.done());
  } finally {
    options.signal?.removeEventListener('abort', stop);
    input.close();
  }
  report(io, options, `loaded ${plural(r.loaded, 'row')} into ${table}${r.already > 0 ? `, ${r.already} there already (an earlier load of the same lines)` : ''}, rejected ${plural(r.rejected, 'line')}`);
  if (r.rejected > 0) {
    const others = r.loaded + r.already === 0 ? 'no other line holds an event' : r.already === 0 ? 'the other lines were loaded' : r.loaded === 0 ? 'the other lines were loaded before' : `the other lines were loaded (${r.already} of them before)`;
    throw new InputError(`${r.rejected} line${r.rejected === 1 ? ' was' : 's were'} rejected${r.rejected > NAMED_REJECTS ? ` (the first ${NAMED_REJECTS} are named above)` : ''}; ${others}.`);
  }
  await lib.announce('load');
  return [r];
}
