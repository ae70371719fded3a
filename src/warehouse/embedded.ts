// fs.promises, read where it is used: Node loads it then, when a load stages its lines, not as every run starts.
import { accessSync, constants, createReadStream, existsSync, promises as fsPromises, readdirSync, rmSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { errnoText } from '../errno.js';
import { InputError, SavedqError, WarehouseError } from '../errors.js';
import { inDirectory, makeDirectory, ownDirectory } from '../fs.js';
import { nodeCrypto } from '../lazy.js';
import { loadClient } from './load-client.js';
import { BASE_SETTINGS, clientRun, quoteText, settingsClause } from './client.js';
import { toWarehouseError } from './errors.js';
import { counting, engaged } from './lane.js';
import { failingAs, firstRead, whenEnded } from './streams.js';
import { GENERATION_FILE } from './generation.js';
import { connectToServe, SOCKET, socketPath } from './engine-socket.js';
import { stagedSource } from './staging.js';
import { LOCK_FILE, lockDataDir, OWNER_FILE, StopWaiting } from './lock.js';
import type { Answers, StagedLines, Statement, Statements, StreamChunk, StreamFormat } from './types.js';

/** What the embedded engine needs: its data directory, and how long to wait for another process to let go of it. */
export interface EmbeddedOptions {
  readonly dataDir: string;
  readonly lockWaitMs: number;
  /** A query's time limit, for bounding the wait on a serve that shares the engine. */
  readonly timeoutSeconds: number;
  readonly signal?: AbortSignal | undefined;
  /**
   * Whether to send statements to a `savedq serve` that shares the engine of the directory, rather than
   * wait for the directory (default). `serve` itself owns the engine: false.
   */
  readonly useShared?: boolean | undefined;
  /** Told once, with who holds it, when the data directory must be waited for. */
  readonly onWait?: ((holder: string) => void) | undefined;
}

/** Where batches are staged for the engine to read: cleared whenever a process takes the directory. */
const STAGING_DIR = 'savedq-load';
/**
 * Where the engine writes an export's Parquet or Arrow file to be read from (engineFile): cleared too.
 * A folder only savedq makes, so that a data directory holding nothing else yet is still known for one.
 */
const EXPORTS_DIR = 'savedq-export';

/** Parts a batch is read in by its inserts: a stream each (at most 8), as the engine checks one file's rows in a single stream. */
const INSERT_STREAMS = Math.min(8, Math.max(2, availableParallelism()));

/** Whether a path can be part of a `file()` glob: it holds none of the glob's own characters. */
function globSafe(path: string): boolean {
  return !/[*?{}[\]]/.test(path);
}

/** A batch cut at line ends into about `count` parts of about equal size (fewer if it has fewer lines). */
export function splitLines(lines: Buffer, count: number): Buffer[] {
  const parts: Buffer[] = [];
  let start = 0;
  for (let k = 1; k < count && start < lines.length; k++) {
    const end = lines.indexOf(0x0a, Math.max(start, Math.floor((k * lines.length) / count) - 1));
    if (end === -1 || end + 1 >= lines.length) break;
    parts.push(lines.subarray(start, end + 1));
    start = end + 1;
  }
  parts.push(lines.subarray(start));
  return parts;
}

/**
 * The data directory, made (mode 0700) or checked: the engine's files are the log data, for its owner
 * alone. One another user owns, or others may write to, is refused (exit 2) with the fix; so is a
 * folder of other files (`--data-dir ~/project`), before anything in it is changed: the engine would
 * write its folders among them, and savedq narrow its mode and clear what a killed load left there.
 */
function prepareDataDir(dataDir: string): void {
  let unsafe: string | undefined;
  try {
    const stat = statSync(dataDir, { throwIfNoEntry: false });
    if (stat !== undefined && !stat.isDirectory()) unsafe = 'it is a file, not a directory; give a directory';
    else unsafe = othersFiles(dataDir) ?? ownDirectory(dataDir);
    if (unsafe === undefined) accessSync(dataDir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (err) {
    if (err instanceof WarehouseError) throw err;
    throw new WarehouseError(`cannot use data directory ${dataDir}: ${errnoText(err, 'folder')}.`, { cause: err });
  }
  if (unsafe !== undefined) throw new InputError(`refusing data directory ${dataDir}: ${unsafe}.`);
}

/** Files only savedq makes in a data directory (its load's staging folder aside: a name a user's folder may have). */
const SAVEDQ_FILES = [GENERATION_FILE, SOCKET, LOCK_FILE, OWNER_FILE, EXPORTS_DIR];
/** What the engine makes in its path, as a ClickHouse server does; `tmp` first, before its tables. */
const ENGINE_NAMES = ['access', 'data', 'flags', 'format_schemas', 'metadata', 'metadata_dropped', 'named_collections', 'preprocessed_configs', 'status', 'store', 'tmp', 'user_defined', 'user_files', 'user_scripts', 'uuid'];

/**
 * Why a folder is not a data directory: it holds files other than the engine's and savedq's, and
 * neither the engine's tables (its `metadata` and `store` folders) nor a file only savedq makes.
 * Undefined for a data directory, an empty folder (a file system's own `lost+found` aside: a disk of
 * its own mounted there), none, or one this process may not read.
 */
function othersFiles(dataDir: string): string | undefined {
  let names: string[];
  try {
    names = readdirSync(dataDir).filter((name) => name !== 'lost+found');
  } catch {
    return undefined; // none yet, or not readable: ownDirectory and the access check say which
  }
  if (names.some((name) => SAVEDQ_FILES.includes(name)) || (names.includes('metadata') && names.includes('store'))) return undefined;
  const others = names.filter((name) => !ENGINE_NAMES.includes(name)).sort();
  if (others.length === 0) return undefined;
  return `it holds other files (${others.slice(0, 3).join(', ')}${others.length > 3 ? ', …' : ''}) and no data of the engine's; give a new or empty directory`;
}

/** Which socket file the data directory holds, if any: a serve that begins to share the engine makes a new one. */
function socketIdentity(dataDir: string): string | undefined {
  const stat = statSync(socketPath(dataDir), { throwIfNoEntry: false });
  return stat && `${stat.ino}:${stat.mtimeMs}`;
}

/**
 * The engine reads a `config.xml` from the current directory when it starts; start it from the data
 * directory (which holds none) so a stray file where the user stands cannot reconfigure it.
 */
function startedInside<T>(dir: string, start: () => T): T {
  if (existsSync(join(dir, 'config.xml'))) throw new WarehouseError(`data directory ${dir} holds a config.xml; remove it.`);
  return inDirectory(dir, start);
}

/**
 * The embedded engine (chdb) on a data directory: the one a `savedq serve` shares there, or else the
 * engine itself, once this process holds the directory. While it waits for the directory, a serve that
 * begins to share the engine is taken instead.
 */
export async function openEmbedded(options: EmbeddedOptions): Promise<Statements> {
  const { dataDir } = options;
  prepareDataDir(dataDir);
  const useShared = options.useShared !== false;
  for (;;) {
    const shared = await connectToServe(dataDir, options.timeoutSeconds);
    if (shared && useShared) return shared;
    if (shared) {
      // Another serve would wait for the directory for as long as this one runs: say so at once.
      await shared.close();
      throw new WarehouseError(`data directory ${dataDir} is already served by a running savedq serve: one serve a data directory (stop that one, or give this one a --data-dir of its own).`);
    }
    try {
      // A socket there now answers no one (connectToServe found none that does): the wait below ends
      // only for a socket made since, by a serve that has begun to share the engine.
      const stale = socketIdentity(dataDir);
      return await openEngine(options, useShared ? () => socketIdentity(dataDir) !== stale : undefined);
    } catch (err) {
      if (!(err instanceof StopWaiting)) throw err;
    }
  }
}

/** The engine itself, once this process holds the directory: its statements one at a time, queries first. */
async function openEngine(options: EmbeddedOptions, stopIf: (() => boolean) | undefined): Promise<Statements> {
  const { dataDir } = options;
  // The lock is taken while the client and the engine load, rather than one after the other.
  const [loaded, locked] = await Promise.allSettled([
    Promise.all([loadClient(), import('chdb/connection')]),
    lockDataDir({
      dataDir,
      waitMs: options.lockWaitMs,
      signal: options.signal,
      // What a killed process left, which nothing can be using now: a batch a load staged, and the
      // socket of a serve (a serve holds the directory for as long as it answers).
      onTaken: () => {
        rmSync(join(dataDir, STAGING_DIR), { recursive: true, force: true });
        rmSync(join(dataDir, EXPORTS_DIR), { recursive: true, force: true });
        rmSync(socketPath(dataDir), { force: true });
      },
      stopIf,
      onWait: options.onWait,
    }),
  ]);
  if (loaded.status === 'rejected') {
    if (locked.status === 'fulfilled') await locked.value();
    throw loaded.reason;
  }
  if (locked.status === 'rejected') throw locked.reason;
  const [[{ createClient, ClickHouseLogLevel }, { createChdbConnection }], release] = [loaded.value, locked.value];
  const location = `the embedded engine at ${dataDir}`;
  try {
    const connection = startedInside(dataDir, () => createChdbConnection({ path: dataDir }));
    // chdb declares the Connection type of @clickhouse/client-common, which the client now bundles as
    // its own copy: the same shape under two names, hence the cast.
    const client = createClient({
      connection: connection as unknown as NonNullable<Parameters<typeof createClient>[0]>['connection'],
      clickhouse_settings: BASE_SETTINGS,
      log: { level: ClickHouseLogLevel.OFF },
    });
    const run = drainedAfterFailure(clientRun(client, location), client);
    return counting({
      location,
      embedded: true,
      run: (kind, statement) => {
        if (kind !== 'stream') return run(kind, statement);
        const answer = statement.format === undefined || statement.format === 'JSONEachRow' ? engineStream(dataDir, statement, location) : engineFile(dataDir, client, statement, location);
        return answer as Promise<Answers[typeof kind]>;
      },
      stage: (lines) => stageFiles(join(dataDir, STAGING_DIR), lines, run, location),
      async close() {
        await client.close().finally(release);
      },
    });
  } catch (err) {
    await release();
    throw toWarehouseError(err, location);
  }
}

/**
 * The client's statements, each failure followed by a statement whose answer is dropped. chdb hands
 * what a statement wrote before it failed (its first rows, a JSON answer's head) to the next statement
 * of the connection, in front of that one's own answer: a failed query's first rows would be taken for
 * the next query's, or its answer would be no JSON. In the engine's turn, so nothing comes between.
 */
function drainedAfterFailure(run: Statements['run'], client: ClickHouseClient): Statements['run'] {
  return async (kind, statement) => {
    try {
      return await run(kind, statement);
    } catch (err) {
      await client.command({ query: 'SELECT 1' }).catch(() => undefined);
      throw err;
    }
  };
}

/**
 * A query's answer streamed by the engine in a format (chdb's streaming query), on a connection of its
 * own to the directory's engine: the client's connection reads an answer whole, and this one is read a
 * part at a time, as the output takes them. The engine is counted busy until the stream ends (a process
 * must not exit under it), and the connection is closed then, which stops a query left early.
 */
async function engineStream(dataDir: string, statement: Statement, location: string): Promise<Answers['stream']> {
  const [{ Session }, { parseError }] = await Promise.all([import('chdb'), loadClient()]);
  // chdb's errors carry the engine's text (`Code: N. DB::Exception: …`): read as the client reads a server's.
  const fail = (err: unknown) => toWarehouseError(err instanceof Error && /^Code: \d+\. /.test(err.message) ? parseError(err.message) : err, location);
  const release = engaged();
  let session: InstanceType<typeof Session> | undefined;
  try {
    session = startedInside(dataDir, () => new Session(dataDir));
    const opened = session;
    // A connection of its own has none of the client's session settings: they go in the clause too.
    const stream = opened.queryStreamBind(`${statement.sql}${settingsClause({ ...BASE_SETTINGS, ...statement.settings })}`, { ...statement.params }, { format: statement.format ?? 'JSONEachRow', ...(statement.signal ? { signal: statement.signal } : {}) });
    const parts = (async function* () {
      for await (const chunk of stream) yield { bytes: chunk.raw(), rows: chunk.numRows };
    })();
    const ended = () => {
      opened.close();
      release();
    };
    return failingAs(whenEnded(await firstRead(parts).catch((err: unknown) => { ended(); throw err; }), ended), fail);
  } catch (err) {
    session?.close();
    release();
    throw fail(err);
  }
}

/** The file name each binary format is written under while it is made. */
const FILE_EXTENSIONS: Readonly<Record<Exclude<StreamFormat, 'JSONEachRow'>, string>> = { Parquet: 'parquet', ArrowStream: 'arrows' };

/**
 * A query's answer in a binary format (Parquet, the Arrow stream), written whole by the engine's own
 * writer into a file (`INTO OUTFILE`): the one the statement names (an export's `-o`), else one of the
 * data directory's EXPORTS_DIR, read from there as the output takes it, and removed. chdb's streaming
 * query formats each of its parts as a file of its own (a Parquet file, an Arrow stream, each with its
 * own header and footer), which joined end to end are no file any reader takes past the first part;
 * the engine's writer given the whole answer makes one. The file is written in the engine's turn as any
 * statement is, not streamed to the reader as it is made: a reader's pace then never holds the engine
 * (a statement with parameters holds every other one of the process until it ends: chdb runs them one
 * at a time). A caller that stops waiting (Ctrl-C, the time limit, a client gone) has the statement
 * stopped with KILL QUERY.
 */
async function engineFile(dataDir: string, client: ClickHouseClient, statement: Statement, location: string): Promise<Answers['stream']> {
  const format = statement.format as keyof typeof FILE_EXTENSIONS;
  const dir = join(dataDir, EXPORTS_DIR);
  const marker = nodeCrypto().randomUUID();
  // Beside the caller's file (which the caller made, and removes if this fails), renamed over it once
  // whole; the marker in its name is how KILL QUERY finds the statement.
  const path = statement.file !== undefined ? `${statement.file}.${marker}` : join(dir, `${process.pid}-${marker}.${FILE_EXTENSIONS[format]}`);
  const removeMade = () => fsPromises.rm(path, { force: true });
  const why = (err: unknown) => toWarehouseError(statement.signal?.aborted ? statement.signal.reason : err, location);
  const stop = () => void killQuery(dataDir, marker);
  statement.signal?.addEventListener('abort', stop, { once: true });
  let rows: number;
  try {
    statement.signal?.throwIfAborted();
    if (statement.file === undefined) makeDirectory(dir);
    const { summary } = await client.command({
      query: `${statement.sql}\nINTO OUTFILE ${quoteText(path)} FORMAT ${format}${settingsClause(statement.settings)}`,
      query_params: { ...statement.params },
    });
    // chdb counts an answer's rows as the rows it read.
    rows = Number(summary?.result_rows ?? 0);
    statement.signal?.throwIfAborted();
    const cut = await cutShort(path, format);
    if (cut !== undefined) throw statement.file !== undefined ? new SavedqError(`cannot write ${statement.file}: ${cut}.`) : new WarehouseError(`cannot write the export into ${dir}: ${cut}.`);
    if (statement.file !== undefined) await fsPromises.rename(path, statement.file);
  } catch (err) {
    await removeMade();
    throw why(err);
  } finally {
    statement.signal?.removeEventListener('abort', stop);
  }
  const inFile = statement.file === undefined ? undefined : (await fsPromises.stat(statement.file)).size;
  async function* parts(): AsyncGenerator<StreamChunk> {
    if (inFile !== undefined) {
      yield { bytes: new Uint8Array(0), rows, inFile };
      return;
    }
    try {
      let first = true;
      for await (const bytes of createReadStream(path, { highWaterMark: FILE_PART_BYTES, signal: statement.signal })) {
        // The rows are all in the file: the first part says how many.
        yield { bytes: bytes as Buffer, rows: first ? rows : 0 };
        first = false;
      }
    } finally {
      await removeMade();
    }
  }
  return failingAs(await firstRead(parts()), why);
}

/**
 * Why a file the engine wrote is not whole, or undefined when it ends as its format's files end: a
 * Parquet file with its footer (its length, then PAR1), an Arrow stream with its end-of-stream marker
 * (0xFFFFFFFF, then a length of 0). The engine's writer does not report a failed write (a full disk
 * left a Parquet file of the disk's size, and the statement answered as done): the end it writes last
 * tells.
 */
async function cutShort(path: string, format: keyof typeof FILE_EXTENSIONS): Promise<string | undefined> {
  const handle = await fsPromises.open(path, 'r');
  let whole: boolean;
  try {
    const { size } = await handle.stat();
    const tail = Buffer.alloc(Math.min(8, size));
    await handle.read(tail, 0, tail.length, size - tail.length);
    whole = tail.length === 8 && (format === 'Parquet' ? tail.toString('latin1', 4) === 'PAR1' && size >= 12 + tail.readUInt32LE(0) : tail.readUInt32LE(0) === 0xffffffff && tail.readUInt32LE(4) === 0);
  } finally {
    await handle.close();
  }
  if (whole) return undefined;
  const free = await fsPromises.statfs(dirname(path)).then((fs) => fs.bavail * fs.bsize, () => undefined);
  return free !== undefined && free < FULL_BELOW_BYTES ? errnoText({ code: 'ENOSPC' }) : 'the engine left it unfinished';
}

/** A file system with less than this free is full (what the engine's writer met, as it does not say). */
const FULL_BELOW_BYTES = 1024 * 1024;

/** The size of the parts a made file is read in. */
const FILE_PART_BYTES = 1024 * 1024;

/**
 * Stops the engine's statement whose text holds `marker` (in the name of engineFile's file), from a connection
 * of its own. The marker is a UUID savedq made, written into the text: bound as a parameter, this
 * statement would wait for the one it stops (chdb runs statements with parameters one at a time).
 * Best effort: a statement that has ended meanwhile is no longer there to stop.
 */
async function killQuery(dataDir: string, marker: string): Promise<void> {
  if (!/^[0-9a-f-]{36}$/.test(marker)) return;
  const { Session } = await import('chdb');
  let session: InstanceType<typeof Session> | undefined;
  try {
    session = startedInside(dataDir, () => new Session(dataDir));
    // Its own statement is in the process list too, holding the marker: queryID() leaves it out.
    await session.queryAsync(`KILL QUERY WHERE position(query, '${marker}') > 0 AND query_id != queryID() ASYNC`, { format: 'TabSeparated' });
  } catch {
    // The statement ends at its time limit anyway.
  } finally {
    session?.close();
  }
}

/**
 * Stages a batch as files the engine reads with its file reader, the fastest way in: in parts cut at
 * line ends, one per core, which an insert reads with a glob, a stream a part; and, only if a query
 * asks, whole, so that it reads the lines in order.
 */
async function stageFiles(dir: string, lines: Buffer, run: Statements['run'], location: string): Promise<StagedLines> {
  const name = join(dir, `${process.pid}-${nodeCrypto().randomUUID()}`);
  const parts = globSafe(name) ? splitLines(lines, INSERT_STREAMS) : [lines];
  const partFiles = parts.map((_, i) => `${name}.${i}.ndjson`);
  const partsGlob = parts.length > 1 ? `${name}.{${parts.map((_, i) => i).join(',')}}.ndjson` : (partFiles[0] as string);
  const wholeFile = `${name}.ndjson`;
  let whole: Promise<void> | undefined;
  const release = async () => {
    await Promise.all([...partFiles, wholeFile].map((f) => fsPromises.rm(f, { force: true })));
  };
  try {
    makeDirectory(dir);
    await Promise.all(parts.map((part, i) => fsPromises.writeFile(partFiles[i] as string, part)));
  } catch (err) {
    await release();
    throw toWarehouseError(err, location);
  }
  return {
    source: stagedSource,
    insert: (sql, _format, params, settings) => run('command', { sql, params: { ...params, staged_parts: partsGlob }, settings }),
    async query(statement, params, settings) {
      try {
        await (whole ??= fsPromises.writeFile(wholeFile, lines));
      } catch (err) {
        throw toWarehouseError(err, location);
      }
      return run('query', { sql: statement, params: { ...params, staged_file: wholeFile }, settings });
    },
    release,
  };
}
