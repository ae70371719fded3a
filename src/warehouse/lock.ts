import { readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BusyError } from '../errors.js';
import { toWarehouseError } from './errors.js';

/** What waiting for a data directory needs to know. */
export interface LockOptions {
  readonly dataDir: string;
  /** How long to wait for another process to let go of it. */
  readonly waitMs: number;
  /** When aborted, the wait ends with the abort's reason. */
  readonly signal?: AbortSignal | undefined;
  /** Run once the directory is this process's, before anyone uses the engine: clearing what a killed process left. */
  readonly onTaken?: (dataDir: string) => void;
  /** Asked between tries: true ends the wait with a StopWaiting (a `savedq serve` began to share the engine, say). */
  readonly stopIf?: () => boolean;
  /** Told once, with who holds the directory, when this process has to wait for it. */
  readonly onWait?: ((holder: string) => void) | undefined;
}

/** The wait for the data directory ended because `stopIf` said so. */
export class StopWaiting extends Error {}

const LOCK_POLL_MS = 100;
/** A lock whose holder stopped refreshing it this long ago (killed, say) is taken over. */
const LOCK_STALE_MS = 10_000;
export const LOCK_FILE = '.savedq.lock';
export const OWNER_FILE = '.savedq.owner';

/** The engine's own status file in a data directory: its PID, kept open while the engine runs. */
const ENGINE_STATUS_FILE = 'status';

/** The live process named in an owner file (ours, or the engine's own status file). */
function holderOf(dataDir: string): { pid: number; since: string } | undefined {
  for (const name of [OWNER_FILE, ENGINE_STATUS_FILE]) {
    try {
      const file = join(dataDir, name);
      const status = readFileSync(file, 'utf8');
      const pid = Number(/PID:\s*(\d+)/.exec(status)?.[1]);
      if (!pid || pid === process.pid) continue;
      process.kill(pid, 0);
      if (name === ENGINE_STATUS_FILE && !holdsOpen(pid, file)) continue;
      return { pid, since: /Started at:\s*(.+)/.exec(status)?.[1]?.trim() ?? '' };
    } catch {
      // no such file, or its process is gone
    }
  }
  return undefined;
}

/** Who holds a data directory, for messages: `process 123 (started …)`. */
function holderText(dataDir: string): string {
  const h = holderOf(dataDir);
  return h ? `process ${h.pid}${h.since ? ` (started ${h.since})` : ''}` : 'another process';
}

/**
 * Whether a live process has a file open. An engine killed outright leaves its status file behind, and
 * once its PID is given to another process (after a restart, say) the file names a process that has
 * nothing to do with the directory; a copy of a directory made while its engine ran names that engine,
 * which holds the original. Where /proc cannot tell (another system, another user), it is taken as open.
 */
function holdsOpen(pid: number, file: string): boolean {
  let target: string;
  let fds: string[];
  try {
    target = realpathSync(file);
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return true;
  }
  return fds.some((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === target;
    } catch {
      return false; // closed meanwhile
    }
  });
}

/**
 * Whether the directory's owner file names a process that is gone: its holder was killed (a serve under
 * SIGKILL, say), and the lock is left to go stale. Taking it at once spares the next command the wait.
 */
function ownerGone(dataDir: string): boolean {
  try {
    const pid = Number(/PID:\s*(\d+)/.exec(readFileSync(join(dataDir, OWNER_FILE), 'utf8'))?.[1]);
    if (!pid || pid === process.pid) return false;
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Locks held by this process, by data directory: within one process the engine shares a directory between connections. */
const heldLocks = new Map<string, { users: number; release: Promise<() => Promise<void>> }>();

/**
 * Takes the data directory for this process; resolves with its release. The engine itself admits one
 * process per directory, but asking it is racy and makes it print its refusal on standard error;
 * savedq processes queue on a lock file of their own first (proper-lockfile: atomic mkdir, taken over
 * when its holder stops refreshing it), up to the bound, then fail naming the holder.
 */
export async function lockDataDir(options: LockOptions): Promise<() => Promise<void>> {
  const { dataDir } = options;
  let held = heldLocks.get(dataDir);
  if (!held) {
    held = { users: 0, release: acquire(options) };
    heldLocks.set(dataDir, held);
    held.release.catch(() => heldLocks.delete(dataDir));
  }
  const entry = held;
  const release = await entry.release;
  entry.users += 1;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    entry.users -= 1;
    if (entry.users === 0) {
      heldLocks.delete(dataDir);
      await release();
    }
  };
}

async function acquire(options: LockOptions): Promise<() => Promise<void>> {
  const { default: lockfile } = await import('proper-lockfile');
  const { dataDir } = options;
  const deadline = Date.now() + options.waitMs;
  let takenOver = false;
  let waiting = false;
  for (;;) {
    try {
      const release = await lockfile.lock(dataDir, {
        lockfilePath: join(dataDir, LOCK_FILE),
        realpath: false,
        stale: LOCK_STALE_MS,
        retries: 0,
        // A long synchronous stretch can delay the refresh; the engine's own lock still protects the data.
        onCompromised: () => undefined,
      });
      writeFileSync(join(dataDir, OWNER_FILE), `PID: ${process.pid}\nStarted at: ${new Date().toISOString()}\n`);
      if (!holderOf(dataDir)) {
        options.onTaken?.(dataDir);
        return async () => {
          rmSync(join(dataDir, OWNER_FILE), { force: true });
          await release().catch(() => undefined);
        };
      }
      await release(); // a process that is not savedq holds the engine
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw toWarehouseError(err, `data directory ${dataDir}`);
      if (!takenOver && ownerGone(dataDir) && !holderOf(dataDir)) {
        takenOver = true;
        rmSync(join(dataDir, LOCK_FILE), { recursive: true, force: true });
        continue;
      }
    }
    // Waiting holds nothing of the engine, so an interrupt can end the wait at once.
    if (options.signal?.aborted) throw options.signal.reason;
    if (options.stopIf?.()) throw new StopWaiting();
    if (Date.now() >= deadline) {
      throw new BusyError(`data directory ${dataDir} is in use by ${holderText(dataDir)}; gave up after ${options.waitMs / 1000} s (see --lock-wait).`);
    }
    if (!waiting) {
      waiting = true;
      options.onWait?.(holderText(dataDir));
    }
    await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
  }
}
