import { once } from 'node:events';
import { createWriteStream, renameSync, rmSync, type WriteStream } from 'node:fs';
import { basename } from 'node:path';
import { exportFormat, EXPORT_FORMATS, type ExportProgress } from '../calls/export.js';
import { InputError, SavedqError } from '../errors.js';
import { cannotWriteText, errnoText } from '../errno.js';
import type { Savedq } from '../library.js';
import { parsePairs } from '../queries/params.js';
import type { AsOf } from '../time.js';
import { bytesText, grouped } from '../words.js';
import { progress } from './progress.js';
import { checkInterrupted, writeOut, type CommonOptions, type Io, type OutStream } from './io.js';

/** Options of `savedq export`. */
export interface ExportCommandOptions extends CommonOptions {
  readonly nameOrId: string;
  readonly params: readonly string[];
  /** ndjson (default), csv, parquet or arrow. */
  readonly format?: string | undefined;
  /** Written to `<output>.partial`, renamed once whole; absent: standard output. */
  readonly output?: string | undefined;
  readonly at?: AsOf;
  readonly sql?: string | undefined;
}

/**
 * `savedq export`: a saved query's whole answer, past its row cap, streamed to standard output or a
 * file in a format the next tool reads (CONTRACT §19). A file is written whole or not at all: to
 * `<file>.partial`, renamed once the last byte is written; an export that fails or is interrupted
 * removes it.
 */
export async function exportCommand(lib: Savedq, options: ExportCommandOptions, io: Io): Promise<void> {
  const format = exportFormat(options.format ?? 'ndjson');
  const toTerminal = options.output === undefined && io.stdout.isTTY === true;
  if (toTerminal && EXPORT_FORMATS[format].binary) {
    throw new InputError(`${format} is a binary format: give -o FILE or redirect standard output (savedq export … -f ${format} > out.${EXPORT_FORMATS[format].extension}).`);
  }
  // The call is checked first, then the file opened, before the query runs: a bad parameter or a path
  // that cannot be written is said at once, and leaves nothing behind.
  const call = await lib.prepare({ nameOrId: options.nameOrId, params: parsePairs(options.params), at: options.at, sql: options.sql });
  const partial = options.output === undefined ? undefined : `${options.output}.partial`;
  const file = partial === undefined ? undefined : await openPartial(partial);
  // What the file's writes met (a full disk), said as the reason it cannot be written.
  let failed: unknown;
  file?.on('error', (err) => (failed ??= err));
  const cannotWrite = (err: unknown) => new SavedqError(`cannot write ${partial ?? ''}: ${err === undefined ? 'the file was closed' : errnoText(err, 'file')}.`, { cause: err });
  const out: OutStream = file ?? io.stdout;
  const shown = progress(io, options);
  const startedAt = Date.now();
  let exported: ExportProgress;
  try {
    const answer = await lib.exportPrepared(call, { format, signal: options.signal, terminal: toTerminal, csvRaw: options.csvRaw, file: partial });
    for await (const bytes of answer.bytes) {
      if (!(await writeOut(out, bytes))) {
        // The reader has gone (`| head`): not an error, the end of the output; the query is stopped.
        if (file === undefined) return;
        throw cannotWrite(failed);
      }
      shown.update(progressText(answer.progress(), startedAt));
    }
    checkInterrupted(options.signal);
    exported = answer.progress();
    if (file !== undefined && partial !== undefined && options.output !== undefined) {
      await closed(file).catch((err: unknown) => {
        throw cannotWrite(err);
      });
      renameSync(partial, options.output);
    }
  } catch (err) {
    if (file !== undefined && partial !== undefined) {
      file.destroy();
      rmSync(partial, { force: true });
    }
    throw err;
  } finally {
    shown.done();
  }
  // The last line a person watching sees (standard error a terminal, or --verbose): what was written.
  if (!options.quiet && (options.verbose === true || io.stderr.isTTY === true)) {
    io.stderr.write(`${options.output === undefined ? 'exported' : `wrote ${basename(options.output)}`}: ${exportedText(exported)} (${format}) in ${((Date.now() - startedAt) / 1000).toFixed(1)} s\n`);
  }
}

/** `12,345 rows, 3.4 MB` (bytes in words.ts's units, as run's --stats): what was written (a server's Parquet and Arrow do not count their rows). */
function exportedText({ rows, bytes }: ExportProgress): string {
  return `${rows === undefined ? '' : `${grouped(rows, 'row')}, `}${bytesText(bytes)}`;
}

/** "exporting: 1,234,567 rows, 61.2 MB, 401,234 rows/s" */
function progressText(exported: ExportProgress, startedAt: number): string {
  const seconds = Math.max(0.001, (Date.now() - startedAt) / 1000);
  const rate = exported.rows === undefined ? `${(exported.bytes / 1e6 / seconds).toFixed(1)} MB/s` : `${Math.round(exported.rows / seconds).toLocaleString('en-US')} rows/s`;
  return `exporting: ${exportedText(exported)}, ${rate}`;
}

/** A file for the export to be written to, made now (exclusive of nothing: a partial file left by a killed export is written over). */
async function openPartial(path: string): Promise<WriteStream> {
  const file = createWriteStream(path, { mode: 0o644 });
  try {
    await once(file, 'open');
  } catch (err) {
    throw new InputError(`cannot write ${path}: ${cannotWriteText(err, path)}.`);
  }
  return file;
}

/** A file ended and closed: its last bytes written (not synced to the disk). */
async function closed(file: WriteStream): Promise<void> {
  file.end();
  // Closed once its last bytes are written (autoClose); a failed write is the 'error' once rejects with.
  await once(file, 'close');
}
