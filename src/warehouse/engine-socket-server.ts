import { rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { InterruptedError, WarehouseError } from '../errors.js';
import { nodeCrypto } from '../lazy.js';
import { drained } from '../drain.js';
import { jsonText } from '../json.js';
import { readFrames, writeFrame } from './frames.js';
import { atSocket, OPERATIONS, socketPath, toWire, type Answer, type Operation, type Request, type StatementRequest } from './engine-socket.js';
import { deadlineSignal } from './deadline.js';
import type { CallContext, ChunkStream, LinesFormat, StagedLines, StatementKind, Statements, StreamFormat } from './types.js';
import type { Log } from '../report.js';

/** What each operation needs besides its id: a statement, a staged batch, or both. */
const NEEDS: { readonly [O in Operation]: { statement: boolean; staged: boolean } } = {
  run: { statement: true, staged: false },
  stage: { statement: false, staged: false },
  insert: { statement: true, staged: true },
  'query-staged': { statement: true, staged: true },
  release: { statement: false, staged: true },
  cancel: { statement: false, staged: true },
};

/** The kinds of statement a `run` may be. */
const KINDS: { readonly [K in StatementKind]: true } = { query: true, measure: true, explain: true, command: true, stream: true };

/** The formats of a streamed answer, and of a staged batch. */
const STREAM_FORMATS: readonly unknown[] = ['JSONEachRow', 'Parquet', 'ArrowStream'] satisfies StreamFormat[];
const LINES_FORMATS: readonly unknown[] = ['JSONEachRow', 'LineAsString'] satisfies LinesFormat[];

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A frame's id, when it has one that an answer can carry. */
function idOf(header: unknown): number | undefined {
  return isObject(header) && Number.isSafeInteger(header.id) ? (header.id as number) : undefined;
}

/** A frame's header as a request savedq can run, or what is wrong with it (a peer's bytes are not trusted). */
function checkRequest(header: unknown): Request | string {
  if (!isObject(header)) return 'a frame whose header is not an object';
  if (idOf(header) === undefined) return 'a request without a whole-number id';
  const op = (OPERATIONS as readonly unknown[]).includes(header.op) ? (header.op as Operation) : undefined;
  if (!op) return `an unknown operation ${JSON.stringify(String(header.op)).slice(0, 40)}`;
  const needs = NEEDS[op];
  if (op === 'run' && !(typeof header.kind === 'string' && Object.hasOwn(KINDS, header.kind))) return `a run of an unknown kind ${JSON.stringify(String(header.kind)).slice(0, 40)}`;
  if (needs.staged && typeof header.staged !== 'string') return `a ${String(header.op)} request without its staged batch`;
  if (needs.statement) {
    const s = header.statement;
    if (!isObject(s) || typeof s.sql !== 'string') return `a ${String(header.op)} request without its statement`;
    if ((s.params !== undefined && !isObject(s.params)) || (s.settings !== undefined && !isObject(s.settings))) return 'a statement whose parameters or settings are not objects';
    const formats = header.kind === 'stream' ? STREAM_FORMATS : LINES_FORMATS;
    if (s.format !== undefined && !formats.includes(s.format)) return 'a statement in an unknown format';
    if (s.deadline !== undefined && !Number.isSafeInteger(s.deadline)) return 'a statement whose deadline is not a whole number';
    if (s.caller !== undefined && !(typeof s.caller === 'string' && s.caller.length <= 200)) return 'a statement whose caller is not a short text';
  }
  return header as unknown as Request;
}

/**
 * A statement's call as the asking process made it: its deadline (the signal aborts then too: its wait
 * for a slot ends with its time, as it would have in that process) and its caller, else the asking
 * process itself, so that the slots go round the processes sharing the engine.
 */
function callOf(s: StatementRequest | undefined, signal: AbortSignal, peer: string): CallContext {
  const caller = s?.caller === undefined ? peer : `${peer}: ${s.caller}`;
  if (s?.deadline === undefined) return { signal, caller };
  return { signal: AbortSignal.any([signal, deadlineSignal(s.deadline)]), deadline: s.deadline, caller };
}

/** The most of an answer's JSON one frame carries; a bigger answer goes in several. */
const ANSWER_PART_BYTES = 4 * 1024 * 1024;

/** Sends a request's value as its answer: its JSON in frames of at most ANSWER_PART_BYTES. */
function writeAnswer(socket: Socket, id: number, value: unknown): void {
  const json = value === undefined ? Buffer.alloc(0) : Buffer.from(jsonText(value));
  let at = 0;
  for (; json.length - at > ANSWER_PART_BYTES; at += ANSWER_PART_BYTES) {
    writeFrame(socket, { id, more: true } satisfies Answer, json.subarray(at, at + ANSWER_PART_BYTES));
  }
  writeFrame(socket, { id } satisfies Answer, json.subarray(at));
}

/** Staged batches not released are let go this long after their last use (their process died, say). */
const STAGED_IDLE_MS = 10 * 60_000;

/**
 * The engine this process holds (serve's), answering on the data directory's socket for every other
 * savedq process on the directory (engine-socket.ts). The caller holds the directory, so a socket left
 * there by a serve that died is stale and goes first. `listen` starts it; `close` stops it.
 */
export class EngineSocketServer {
  readonly socket: string;
  readonly #warehouse: Statements;
  readonly #log: Log;
  readonly #server: Server;
  /** Batches staged by the other processes, by id, and when each was last used. */
  readonly #staged = new Map<string, { lines: StagedLines; usedAt: number }>();
  readonly #connections = new Set<Socket>();
  /** Requests under way, and who waits for there to be none (close). */
  #underway = 0;
  #idle: (() => void) | undefined;
  readonly #sweep: NodeJS.Timeout;
  /** A slot for a streamed answer (serve's --max-exports, shared with its own exports). */
  readonly #exportSlot: () => () => void;

  private constructor(warehouse: Statements, path: string, log: Log, exportSlot: () => () => void) {
    this.#warehouse = warehouse;
    this.#exportSlot = exportSlot;
    this.socket = path;
    this.#log = log;
    this.#server = createServer((socket) => this.#connected(socket));
    this.#sweep = setInterval(() => this.#sweepStaged(), 60_000);
    this.#sweep.unref();
  }

  /** Answers on the data directory's socket, made with no permission but the owner's. */
  static async listen(warehouse: Statements, dataDir: string, log: Log, exportSlot: () => () => void = () => () => undefined): Promise<EngineSocketServer> {
    const path = socketPath(dataDir);
    rmSync(path, { force: true });
    const server = new EngineSocketServer(warehouse, path, log, exportSlot);
    const listening = new Promise<void>((resolve, reject) => {
      server.#server.once('listening', resolve);
      server.#server.once('error', reject);
    });
    // Another user can neither connect nor read. The socket is bound within listen(), so the mask is the
    // process's only for that moment.
    const umask = process.umask(0o177);
    try {
      atSocket(dataDir, (at) => server.#server.listen(at));
    } finally {
      process.umask(umask);
    }
    try {
      await listening;
    } catch (err) {
      clearInterval(server.#sweep);
      throw new WarehouseError(`cannot share the engine at ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}.`, { cause: err });
    }
    log.info(`sharing the engine with other savedq processes at ${path}`);
    return server;
  }

  /** Stops taking statements, lets those under way finish, and removes the socket. */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    rmSync(this.socket, { force: true });
    if (this.#underway > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
    for (const socket of this.#connections) socket.destroy();
    await closed;
    await Promise.all([...this.#staged.values()].map((entry) => entry.lines.release()));
    this.#staged.clear();
  }

  /** A process connected: its frames read as they come whole, each request answered on its id. */
  /** Connections made so far: each names its process. */
  #peers = 0;

  #connected(socket: Socket): void {
    this.#connections.add(socket);
    // Who asks, for the slots at the engine: each process sharing it (a connection) a caller of its own.
    const peer = `savedq process ${++this.#peers}`;
    // A process that goes (interrupted, killed) takes its queries still waiting their turn with it.
    const gone = new AbortController();
    socket.on('close', () => {
      this.#connections.delete(socket);
      gone.abort(new InterruptedError('the process that sent the statement has gone.'));
    });
    socket.on('error', () => socket.destroy());
    /** A frame savedq cannot take: one line in the log, an error for its id when it has one, and the connection closed. */
    const refuse = (reason: string, id?: number) => {
      this.#log.warn(`socket: closed a connection that sent ${reason}`);
      if (id !== undefined && !socket.destroyed) {
        writeFrame(socket, { id, error: toWire(new WarehouseError(`savedq serve cannot take this request: ${reason}.`), this.#warehouse.location) } satisfies Answer);
      }
      socket.end(() => socket.destroy());
    };
    /** This connection's streamed answers under way, by their request's id: a `cancel` stops one. */
    const streams = new Map<number, AbortController>();
    readFrames(socket, (header, body) => {
      const checked = checkRequest(header);
      if (typeof checked === 'string') { refuse(checked, idOf(header)); return; }
      const request = checked;
      if (request.op === 'cancel') {
        streams.get(Number(request.staged))?.abort(new InterruptedError('the process that asked stopped reading the answer.'));
        return;
      }
      this.#underway += 1;
      if (request.op === 'run' && request.kind === 'stream') {
        const stopped = new AbortController();
        streams.set(request.id, stopped);
        void this.#streamTo(socket, request, AbortSignal.any([gone.signal, stopped.signal]), peer).finally(() => {
          streams.delete(request.id);
          this.#underway -= 1;
          if (this.#underway === 0) this.#idle?.();
        });
        return;
      }
      void this.#handle(request, body, gone.signal, peer)
        .then(
          (value) => {
            if (!socket.destroyed) writeAnswer(socket, request.id, value);
          },
          (err: unknown) => {
            if (!socket.destroyed) writeFrame(socket, { id: request.id, error: toWire(err, this.#warehouse.location) } satisfies Answer);
          },
        )
        .finally(() => {
          this.#underway -= 1;
          if (this.#underway === 0) this.#idle?.();
        });
    }, refuse);
  }

  /**
   * A streamed answer sent as it comes: each part a frame (`more`, and its rows), written no faster
   * than the socket takes them; then an empty frame, or the failure. The asker leaving (its
   * connection closed) or cancelling stops the query.
   */
  async #streamTo(socket: Socket, request: Request, stop: AbortSignal, peer: string): Promise<void> {
    const s = request.statement;
    let release: (() => void) | undefined;
    try {
      // An export of another process counts against --max-exports as serve's own do.
      release = this.#exportSlot();
      const stream: ChunkStream = await this.#warehouse.run('stream', { ...callOf(s, stop, peer), sql: s?.sql ?? '', params: s?.params ?? {}, settings: s?.settings, format: s?.format as StreamFormat | undefined });
      for await (const chunk of stream) {
        if (socket.destroyed) return;
        const more = { id: request.id, more: true, ...(chunk.rows !== undefined ? { rows: chunk.rows } : {}) } satisfies Answer;
        if (!writeFrame(socket, more, Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength))) await drained(socket);
        if (stop.aborted) return;
      }
      if (!socket.destroyed) writeFrame(socket, { id: request.id } satisfies Answer);
    } catch (err) {
      if (!socket.destroyed && !stop.aborted) writeFrame(socket, { id: request.id, error: toWire(err, this.#warehouse.location) } satisfies Answer);
    } finally {
      release?.();
    }
  }

  /** One request's answer: a statement run, a batch staged, inserted, read or released. */
  async #handle(r: Request, body: Buffer, gone: AbortSignal, peer: string): Promise<unknown> {
    const s = r.statement;
    switch (r.op) {
      case 'run':
        return this.#warehouse.run(r.kind as StatementKind, { ...callOf(s, gone, peer), sql: s?.sql ?? '', params: s?.params ?? {}, settings: s?.settings });
      case 'stage': {
        const id = nodeCrypto().randomUUID();
        this.#staged.set(id, { lines: await this.#warehouse.stage(body), usedAt: Date.now() });
        return id;
      }
      case 'insert':
        await this.#stagedBatch(r.staged).insert(s?.sql ?? '', (s?.format as LinesFormat | undefined) ?? 'JSONEachRow', s?.params ?? {}, s?.settings ?? {});
        return null;
      case 'query-staged':
        return this.#stagedBatch(r.staged).query(s?.sql ?? '', s?.params ?? {}, s?.settings ?? {});
      case 'cancel':
        return null; // taken where the frame is read
      case 'release': {
        const entry = r.staged === undefined ? undefined : this.#staged.get(r.staged);
        if (r.staged !== undefined) this.#staged.delete(r.staged);
        await entry?.lines.release();
        return null;
      }
    }
  }

  #stagedBatch(id: string | undefined): StagedLines {
    const entry = id === undefined ? undefined : this.#staged.get(id);
    if (!entry) throw new WarehouseError('the staged batch is gone (released, or the server restarted).');
    entry.usedAt = Date.now();
    return entry.lines;
  }

  /** Batches not released are let go STAGED_IDLE_MS after their last use (their process died, say). */
  #sweepStaged(): void {
    for (const [id, entry] of this.#staged) {
      if (Date.now() - entry.usedAt > STAGED_IDLE_MS) {
        this.#staged.delete(id);
        void entry.lines.release();
      }
    }
  }
}
