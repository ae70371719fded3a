import { rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { InterruptedError, WarehouseError } from '../errors.js';
import { nodeCrypto } from '../lazy.js';
import { readFrames, writeFrame } from './frames.js';
import { atSocket, OPERATIONS, socketPath, toWire, type Answer, type Operation, type Request } from './share.js';
import type { StagedLines, StatementKind, Statements } from './types.js';
import type { Log } from '../report.js';

/** What each operation needs besides its id: a statement, a staged batch, or both. */
const NEEDS: { readonly [O in Operation]: { statement: boolean; staged: boolean } } = {
  run: { statement: true, staged: false },
  stage: { statement: false, staged: false },
  insert: { statement: true, staged: true },
  'query-staged': { statement: true, staged: true },
  release: { statement: false, staged: true },
};

/** The kinds of statement a `run` may be. */
const KINDS: { readonly [K in StatementKind]: true } = { query: true, measure: true, explain: true, command: true };

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
    if (s.format !== undefined && s.format !== 'JSONEachRow' && s.format !== 'LineAsString') return 'a statement in an unknown format';
  }
  return header as unknown as Request;
}

/** The most of an answer's JSON one frame carries; a bigger answer goes in several. */
const ANSWER_PART_BYTES = 4 * 1024 * 1024;

/** Sends a request's value as its answer: its JSON in frames of at most ANSWER_PART_BYTES. */
function writeAnswer(socket: Socket, id: number, value: unknown): void {
  const json = value === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(value));
  let at = 0;
  for (; json.length - at > ANSWER_PART_BYTES; at += ANSWER_PART_BYTES) {
    writeFrame(socket, { id, more: true } satisfies Answer, json.subarray(at, at + ANSWER_PART_BYTES));
  }
  writeFrame(socket, { id } satisfies Answer, json.subarray(at));
}

/** Staged batches not released are let go this long after their last use (their process died, say). */
const STAGED_IDLE_MS = 10 * 60_000;

/** A running share of the engine. */
export interface EngineShare {
  readonly socket: string;
  /** Stops taking statements, lets those under way finish, and removes the socket. */
  close(): Promise<void>;
}

/**
 * Shares a warehouse (the embedded engine this process holds) on the data directory's socket, for every
 * other savedq process on the directory (share.ts). The caller holds the directory, so a socket left
 * there by a serve that died is stale and goes first.
 */
export async function shareWarehouse(
  warehouse: Statements,
  dataDir: string,
  log: Log,
): Promise<EngineShare> {
  const path = socketPath(dataDir);
  rmSync(path, { force: true });
  const staged = new Map<string, { lines: StagedLines; usedAt: number }>();
  const connections = new Set<Socket>();
  let underway = 0;
  let idle: (() => void) | undefined;

  const stagedBatch = (id: string | undefined): StagedLines => {
    const entry = id === undefined ? undefined : staged.get(id);
    if (!entry) throw new WarehouseError('the staged batch is gone (released, or the server restarted).');
    entry.usedAt = Date.now();
    return entry.lines;
  };

  async function handle(r: Request, body: Buffer, gone: AbortSignal): Promise<unknown> {
    const s = r.statement;
    switch (r.op) {
      case 'run':
        return warehouse.run(r.kind as StatementKind, { sql: s?.sql ?? '', params: s?.params ?? {}, settings: s?.settings, signal: gone });
      case 'stage': {
        const id = nodeCrypto().randomUUID();
        staged.set(id, { lines: await warehouse.stage(body), usedAt: Date.now() });
        return id;
      }
      case 'insert':
        await stagedBatch(r.staged).insert(s?.sql ?? '', s?.format ?? 'JSONEachRow', s?.params ?? {}, s?.settings ?? {});
        return null;
      case 'query-staged':
        return stagedBatch(r.staged).query(s?.sql ?? '', s?.params ?? {}, s?.settings ?? {});
      case 'release': {
        const entry = r.staged === undefined ? undefined : staged.get(r.staged);
        if (r.staged !== undefined) staged.delete(r.staged);
        await entry?.lines.release();
        return null;
      }
    }
  }

  const server = createServer((socket) => {
    connections.add(socket);
    // A process that goes (interrupted, killed) takes its queries still waiting their turn with it.
    const gone = new AbortController();
    socket.on('close', () => {
      connections.delete(socket);
      gone.abort(new InterruptedError('the process that sent the statement has gone.'));
    });
    socket.on('error', () => socket.destroy());
    /** A frame savedq cannot take: one line in the log, an error for its id when it has one, and the connection closed. */
    const refuse = (reason: string, id?: number) => {
      log.warn(`socket: closed a connection that sent ${reason}`);
      if (id !== undefined && !socket.destroyed) {
        writeFrame(socket, { id, error: toWire(new WarehouseError(`savedq serve cannot take this request: ${reason}.`)) } satisfies Answer);
      }
      socket.end(() => socket.destroy());
    };
    readFrames(socket, (header, body) => {
      const checked = checkRequest(header);
      if (typeof checked === 'string') { refuse(checked, idOf(header)); return; }
      const request = checked;
      underway += 1;
      void handle(request, body, gone.signal)
        .then(
          (value) => {
            if (!socket.destroyed) writeAnswer(socket, request.id, value);
          },
          (err: unknown) => {
            if (!socket.destroyed) writeFrame(socket, { id: request.id, error: toWire(err) } satisfies Answer);
          },
        )
        .finally(() => {
          underway -= 1;
          if (underway === 0) idle?.();
        });
    }, refuse);
  });

  const sweep = setInterval(() => {
    for (const [id, entry] of staged) {
      if (Date.now() - entry.usedAt > STAGED_IDLE_MS) {
        staged.delete(id);
        void entry.lines.release();
      }
    }
  }, 60_000);
  sweep.unref();

  const listening = new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  // Made with no permission but the owner's: another user can neither connect nor read. The socket is
  // bound within listen(), so the mask is the process's only for that moment.
  const umask = process.umask(0o177);
  try {
    atSocket(dataDir, (at) => server.listen(at));
  } finally {
    process.umask(umask);
  }
  try {
    await listening;
  } catch (err) {
    throw new WarehouseError(`cannot share the engine at ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}.`, { cause: err });
  }
  log.info(`sharing the engine with other savedq processes at ${path}`);
  return {
    socket: path,
    async close() {
      clearInterval(sweep);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(path, { force: true });
      if (underway > 0) await new Promise<void>((resolve) => (idle = resolve));
      for (const socket of connections) socket.destroy();
      await closed;
      await Promise.all([...staged.values()].map((entry) => entry.lines.release()));
      staged.clear();
    },
  };
}
