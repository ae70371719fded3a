import type { ClickHouseSettings } from '@clickhouse/client';
import { lstatSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { BusyError, InputError, InterruptedError, OverloadedError, QueryTimeoutError, SavedqError, WarehouseError, WarehouseUnreachableError, type EngineFailure } from '../errors.js';
import { toWarehouseError } from './errors.js';
import { inDirectory } from '../fs.js';
import { parseJson } from '../json.js';
import { stagedSource } from './staging.js';
import { firstRead } from './streams.js';
import type { Answers, ChunkStream, LinesFormat, Statement, StagedLines, StatementKind, StatementParams, Statements, StreamChunk, StreamFormat, WarehouseRow } from './types.js';

// A `savedq serve` owns the embedded engine of its data directory for as long as it runs, and shares it
// with every other savedq process: they send their statements here instead of waiting for the
// directory. Frames (frames.ts) over a Unix domain socket inside the data directory, which only the
// directory's owner can reach (mode 0600): no TCP, no key. The other processes keep their own configuration, validation
// and cache; only the statements travel.

/** The socket's name, in the data directory (embedded.ts waits for it too). */
export const SOCKET = 'savedq.sock';

/** Path of the socket of a data directory. */
export function socketPath(dataDir: string): string {
  return join(dataDir, SOCKET);
}

/** The longest path a Unix socket is bound or reached by (the address holds 108 bytes with its NUL). */
const SOCKET_PATH_MAX = 107;

/**
 * Binds or reaches the socket of a data directory (`use` must do so at once, as listen() and
 * connect() do): by its path, or, when that is too long for a socket's address, from inside the data
 * directory by its bare name. (Node would cut the long path short and bind a file of another name.)
 */
export function atSocket<T>(dataDir: string, use: (path: string) => T): T {
  const path = socketPath(dataDir);
  return Buffer.byteLength(path) <= SOCKET_PATH_MAX ? use(path) : inDirectory(dataDir, () => use(`./${SOCKET}`));
}

/** A failure as it travels back to the process that asked: its kind in the family, its text, the engine's word. */
export interface WireError {
  /** The error's class (its name). */
  readonly kind: string;
  readonly message: string;
  readonly engine?: EngineFailure | undefined;
  /** What a caller of serve is told of it. */
  readonly forCaller?: string | undefined;
  /** A time limit passed (QueryTimeoutError's). */
  readonly ranPastLimit?: boolean | undefined;
}

/**
 * An error as it travels to the process that asked: whole (its class, message, the engine's failure,
 * what a caller may read, a time limit passed), as the one classifier (errors.ts's toWarehouseError)
 * made it in the engine's owner, so the other process reads what the owner would have.
 */
export function toWire(err: unknown, location: string): WireError {
  const e = toWarehouseError(err, location);
  return {
    kind: e.name,
    message: e.message,
    ...(e instanceof WarehouseError && e.engine !== undefined ? { engine: e.engine } : {}),
    ...(e.forCaller !== e.message ? { forCaller: e.forCaller } : {}),
    ...(e instanceof QueryTimeoutError && e.ranPastLimit ? { ranPastLimit: true } : {}),
  };
}

function fromWire(wire: WireError): SavedqError {
  const options = { ...(wire.forCaller !== undefined ? { forCaller: wire.forCaller } : {}) };
  switch (wire.kind) {
    case 'QueryTimeoutError':
      return new QueryTimeoutError(wire.message, { ...options, ranPastLimit: wire.ranPastLimit === true });
    case 'BusyError':
      return new BusyError(wire.message);
    case 'InterruptedError':
      return new InterruptedError(wire.message, options);
    case 'OverloadedError':
      return new OverloadedError(wire.message, options);
    case 'InputError':
      return new InputError(wire.message, options);
    case 'WarehouseUnreachableError':
      return new WarehouseUnreachableError(wire.message, { ...options, engine: wire.engine });
    default:
      return new WarehouseError(wire.message, { ...options, engine: wire.engine });
  }
}

/** What a statement sent to the engine's owner says. */
export interface StatementRequest {
  readonly sql: string;
  readonly params?: StatementParams;
  readonly settings?: ClickHouseSettings;
  /** A staged batch's format (an insert), or a streamed answer's (a run of kind `stream`). */
  readonly format?: LinesFormat | StreamFormat;
  /** The call's deadline (epoch ms): the owner's queue and engine keep it, as this process's would. */
  readonly deadline?: number;
  /** Who the call is for, as this process knows: the owner's slots go round its callers. */
  readonly caller?: string;
}

/**
 * Whether a data directory has a socket a `savedq serve` of this user may be answering on. A socket
 * another user owns, or that others may write to, is refused: whoever listens there would be sent the
 * query and its parameters, and could answer anything.
 */
function hasSocket(dataDir: string): boolean {
  const path = socketPath(dataDir);
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (!stat) return false;
  if (!stat.isSocket()) throw new InputError(`${path} is not a socket of savedq serve; remove it (rm ${path}).`);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    throw new InputError(`the socket ${path} belongs to another user (uid ${stat.uid}); savedq sends nothing there. Remove it, or use a data directory of your own.`);
  }
  if ((stat.mode & 0o022) !== 0) throw new InputError(`the socket ${path} can be written by other users; run chmod 600 ${path}, or remove it.`);
  return true;
}

/**
 * What a process asks of the engine's owner: `run` a statement of a kind; `stage` a batch of lines (the
 * frame's body); `insert` or `query-staged` a staged batch; `release` it; `cancel` a streamed answer
 * (`run` of kind `stream`, whose request's id `staged` names) that it stopped reading.
 */
export const OPERATIONS = ['run', 'stage', 'insert', 'query-staged', 'release', 'cancel'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** A request to the engine's owner: what to do, with a statement or a payload. */
export interface Request {
  readonly id: number;
  readonly op: Operation;
  /** The kind of statement a `run` is. */
  readonly kind?: StatementKind;
  readonly statement?: StatementRequest;
  /** The staged batch an `insert`, `query-staged` or `release` is about. */
  readonly staged?: string;
}

/**
 * An answer's header: the request's id, and its failure. A value travels as JSON in the frames' bodies,
 * in parts when it is big (`more` on every frame but the last), so that no answer is too big for a
 * frame: a frame's limits guard against a broken peer, never against what a user asked.
 */
export interface Answer {
  readonly id: number;
  readonly error?: WireError;
  readonly more?: true;
  /** A streamed answer's part: the rows its bytes hold, when the engine said. */
  readonly rows?: number;
}

/** A streamed answer being received: its parts, as they come, to the one reading them. */
interface Streaming {
  part(chunk: StreamChunk): void;
  end(err?: SavedqError): void;
}

/** Parts of a streamed answer received and not yet read past which the socket is paused (its sender then waits). */
const STREAM_PARTS_HELD = 8;

/** A request sent, waiting for its answer: the parts of an answer sent in several frames, gathered. */
interface Waiting {
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: SavedqError) => void;
  readonly timer: NodeJS.Timeout;
  readonly parts: Buffer[];
}

/**
 * The engine a `savedq serve` shares on this data directory, or undefined when none answers there (no
 * socket, or one a serve that died left behind). Statements then run in the serve process, in its
 * turn with its own requests; a serve that stops or dies under a statement is a clear WarehouseError.
 */
export async function connectToServe(dataDir: string, timeoutSeconds: number): Promise<Statements | undefined> {
  if (!hasSocket(dataDir)) return undefined;
  const [{ connect }, frames] = await Promise.all([import('node:net'), import('./frames.js')]);
  const socket = atSocket(dataDir, (at) => connect(at));
  const connected = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(Object.assign(new Error('it did not take the connection in time'), { code: 'ETIMEDOUT' })), timeoutSeconds * 1000);
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      resolve(err);
    });
  });
  // Nobody listening: a socket left by a serve that died. The caller opens the engine itself.
  if (connected) {
    socket.destroy();
    if (connected.code === 'ECONNREFUSED' || connected.code === 'ENOENT') return undefined;
    throw new WarehouseError(`cannot reach savedq serve at ${dataDir}: ${connected.code ?? connected.message}.`, { cause: connected });
  }
  // Only a savedq serve makes this socket (and removes it when it stops): a connection is its answer.
  return new EngineSocketClient(socket, dataDir, timeoutSeconds, frames);
}

/** The statements of this process sent to serve's engine on its socket, each answered on its id. */
class EngineSocketClient implements Statements {
  readonly location: string;
  readonly embedded = true;
  readonly #socket: Socket;
  readonly #writeFrame: typeof import('./frames.js').writeFrame;
  readonly #waiting = new Map<number, Waiting>();
  #ids = 0;
  /** Why the socket is no use any more: every request after it fails so. */
  #gone: SavedqError | undefined;
  /** A query's answer is waited for as long as the query may run (--timeout), and a little more: a serve that does not answer by then is taken as gone. */
  readonly #queryWaitMs: number;
  /** A load's batches may take longer. */
  readonly #loadWaitMs = 30 * 60_000;

  constructor(socket: Socket, dataDir: string, timeoutSeconds: number, frames: typeof import('./frames.js')) {
    this.#socket = socket;
    this.location = `savedq serve at ${dataDir}`;
    this.#writeFrame = frames.writeFrame;
    this.#queryWaitMs = (timeoutSeconds + 5) * 1000;
    socket.unref(); // waiting on an answer keeps the process alive; an idle connection does not
    frames.readFrames(socket, (header, body) => this.#answered(header as Answer, body), (reason) => {
      this.#fail(this.#lost(`it sent ${reason}`));
      socket.destroy();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => this.#fail(this.#lost(err.code === 'ECONNRESET' || err.code === 'EPIPE' ? 'it closed the connection' : (err.code ?? err.message), err)));
    socket.on('close', () => this.#fail(this.#lost('it closed the connection')));
  }

  // The signal stays here: serve runs the statement for whoever still waits, and drops it unrun when
  // this process goes. A streamed answer is the exception: it is cancelled when its reader stops.
  run<K extends StatementKind>(kind: K, statement: Statement): Promise<Answers[K]> {
    if (kind === 'stream') return this.#stream(statement) as Promise<Answers[K]>;
    // Within the call's deadline, and a second more for the owner's answer that its time is up.
    const waitMs = statement.deadline === undefined ? this.#queryWaitMs : Math.max(0, statement.deadline - Date.now()) + ANSWER_GRACE_MS;
    return this.#call<Answers[K]>({ op: 'run', kind, statement: { ...statementOf(statement.sql, statement.params, statement.settings), ...callOf(statement) } }, waitMs);
  }

  /** Streamed answers being received, by their request's id. */
  readonly #streams = new Map<number, Streaming>();

  /**
   * A streamed answer of serve's engine: its parts as frames on the id of the request, read as they
   * come; the socket is paused while STREAM_PARTS_HELD wait to be read, so serve writes no faster than
   * this process reads. Leaving it early, or the signal, cancels it in serve.
   */
  async #stream(statement: Statement): Promise<ChunkStream> {
    if (this.#gone) throw this.#gone;
    const id = ++this.#ids;
    const held: StreamChunk[] = [];
    let ended: { err?: SavedqError | undefined } | undefined;
    let wake: (() => void) | undefined;
    const woken = () => {
      wake?.();
      wake = undefined;
    };
    this.#streams.set(id, {
      part: (chunk) => {
        held.push(chunk);
        if (held.length >= STREAM_PARTS_HELD) this.#socket.pause();
        woken();
      },
      end: (err) => {
        this.#streams.delete(id);
        ended = { err };
        if (this.#streams.size === 0 && this.#waiting.size === 0) this.#socket.unref();
        woken();
      },
    });
    const cancel = () => {
      if (ended || !this.#streams.has(id)) return;
      this.#streams.delete(id);
      ended = {};
      this.#socket.resume();
      if (!this.#gone) this.#writeFrame(this.#socket, { op: 'cancel', id: ++this.#ids, staged: String(id) } satisfies Request);
      woken();
    };
    statement.signal?.addEventListener('abort', cancel, { once: true });
    const socket = this.#socket;
    async function* parts(): AsyncGenerator<StreamChunk> {
      try {
        for (;;) {
          const chunk = held.shift();
          if (chunk) {
            if (held.length < STREAM_PARTS_HELD / 2) socket.resume();
            yield chunk;
            continue;
          }
          if (ended) {
            if (ended.err) throw ended.err;
            statement.signal?.throwIfAborted();
            return;
          }
          await new Promise<void>((resolve) => (wake = resolve));
        }
      } finally {
        cancel();
        statement.signal?.removeEventListener('abort', cancel);
      }
    }
    this.#socket.ref();
    this.#writeFrame(this.#socket, { op: 'run', kind: 'stream', id, statement: { ...statementOf(statement.sql, statement.params, statement.settings), ...callOf(statement), format: statement.format ?? 'JSONEachRow' } } satisfies Request);
    return firstRead(parts());
  }

  async stage(lines: Buffer): Promise<StagedLines> {
    const staged = await this.#call<string>({ op: 'stage' }, this.#loadWaitMs, lines);
    return {
      source: stagedSource,
      insert: async (sql, format, params, settings) => {
        await this.#call({ op: 'insert', staged, statement: statementOf(sql, params, settings, format) }, this.#loadWaitMs);
      },
      query: (sql, params, settings) => this.#call<WarehouseRow[]>({ op: 'query-staged', staged, statement: statementOf(sql, params, settings) }, this.#loadWaitMs),
      release: async () => {
        await this.#call({ op: 'release', staged }, this.#loadWaitMs).catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    this.#socket.destroy();
  }

  #lost(why: string, cause?: unknown): SavedqError {
    return new WarehouseError(`${this.location} stopped answering (${why}); run the command again.`, { cause });
  }

  /** Fails every request waiting, and every one after, with why the socket is no use. */
  #fail(err: SavedqError): void {
    this.#gone ??= err;
    for (const streaming of [...this.#streams.values()]) streaming.end(this.#gone);
    for (const [id, w] of this.#waiting) {
      clearTimeout(w.timer);
      this.#waiting.delete(id);
      w.reject(this.#gone);
    }
  }

  /** An answer's frame: a part of it, or its end (its value, or its failure). */
  #answered(answer: Answer, body: Buffer): void {
    const streaming = this.#streams.get(answer.id);
    if (streaming) {
      if (answer.error) streaming.end(fromWire(answer.error));
      else if (answer.more) streaming.part({ bytes: body, rows: answer.rows });
      else streaming.end();
      return;
    }
    const w = this.#waiting.get(answer.id);
    if (!w) return;
    if (answer.more) {
      w.parts.push(body);
      return;
    }
    this.#waiting.delete(answer.id);
    clearTimeout(w.timer);
    if (this.#waiting.size === 0) this.#socket.unref();
    if (answer.error) {
      w.reject(fromWire(answer.error));
      return;
    }
    const json = w.parts.length === 0 ? body : Buffer.concat([...w.parts, body]);
    w.resolve(json.length === 0 ? undefined : parseJson(json.toString('utf8')));
  }

  #call<T>(request: Omit<Request, 'id'>, waitMs: number, body?: Buffer): Promise<T> {
    if (this.#gone) return Promise.reject(this.#gone);
    const id = ++this.#ids;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        reject(this.#lost('it did not answer in time'));
      }, waitMs);
      this.#waiting.set(id, { resolve: resolve as (value: unknown) => void, reject, timer, parts: [] });
      this.#socket.ref();
      this.#writeFrame(this.#socket, { ...request, id }, body);
    });
  }
}

/** How long past a call's deadline its answer from serve is waited for (serve says its time is up). */
const ANSWER_GRACE_MS = 1000;

/** A statement's call as it travels to serve: its deadline and caller, where it has them. */
function callOf(statement: Statement): Pick<StatementRequest, 'deadline' | 'caller'> {
  return { ...(statement.deadline !== undefined ? { deadline: statement.deadline } : {}), ...(statement.caller !== undefined ? { caller: statement.caller } : {}) };
}

/** A statement as it travels to serve: empty parameters and settings said, not left out. */
function statementOf(sql: string, params: StatementParams | undefined, settings: ClickHouseSettings | undefined, format?: LinesFormat | StreamFormat): StatementRequest {
  return { sql, params: params ?? {}, settings: settings ?? {}, ...(format ? { format } : {}) };
}
