import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { EVENT_DEADLINE_MS } from './helpers.js';

// The ClickHouse HTTP stand-in over the embedded engine (test/clickhouse-standin.mjs), as a test runs it:
// a child process on a data directory of its own, listening on 127.0.0.1.

const script = fileURLToPath(new URL('./clickhouse-standin.mjs', import.meta.url));

/** A running stand-in. */
export interface Standin {
  /** Its URL, as savedq's --url takes it. */
  readonly url: string;
  readonly child: ChildProcess;
  /** The statements it has run since it started (or since `forget`), oldest first. */
  statements(): Promise<string[]>;
  /** The same, with what each carried and whether it was cancelled. */
  log(): Promise<StandinStatement[]>;
  forget(): Promise<void>;
  /** As it started: accepting, no fault, no delay, its log empty (what each test begins with). */
  reset(): Promise<void>;
  /**
   * Switches a fault on (refuse, accept, hang, slow, reset, exception, exception-tagged, `delay <ms>`, none), or
   * gives a user a profile (`profile <user> readonly=1`, `profile <user> max_execution_time<=10`): resolves once it holds.
   */
  fault(fault: StandinFault): Promise<void>;
  stop(): Promise<void>;
}

export type StandinFault =
  | 'refuse'
  | 'accept'
  | 'hang'
  | 'slow'
  | 'reset'
  | 'exception'
  | 'exception-tagged'
  | 'none'
  | `delay ${number}`
  | `profile ${string}`;

/** A statement as the stand-in received it. */
export interface StandinStatement {
  readonly query: string;
  readonly query_id: string | null;
  readonly session_id: string | null;
  /** The request's settings (URL parameters). */
  readonly settings: Record<string, string>;
  /** The log_comment of its SETTINGS clause, unescaped. */
  readonly log_comment: string | null;
  readonly traceparent: string | null;
  /** The user it was made as (Basic authorization or the `user` parameter); absent for a KILL QUERY. */
  readonly user?: string;
  /** Closed: its connection closed before its answer; killed: a KILL QUERY of its id came first. */
  readonly cancelled: 'closed' | 'killed' | null;
  /** The code a user's profile refused it with (164, 452) before it ran. */
  readonly refused?: number;
  /** A KILL QUERY's: the query id it stops (given as a parameter or a literal). */
  readonly kills?: string;
  /** A KILL QUERY of its id came after it was answered. */
  readonly killed?: boolean;
}

/** Starts a stand-in on `dataDir` (its environment's TZ its time zone, as a server's); resolves once it listens. */
export async function startStandin(dataDir: string, options: { env?: Record<string, string> } = {}): Promise<Standin> {
  const child = spawn(process.execPath, [script, dataDir], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the stand-in never listened; it printed:\n${err}`)), EVENT_DEADLINE_MS);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error(`the stand-in exited; it printed:\n${err}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.on('exit', () => child.kill('SIGKILL'));
  const acks: { line: string; resolve: () => void }[] = [];
  child.stdout.on('data', () => {
    for (const ack of [...acks]) {
      if (out.includes(`ok ${ack.line}\n`)) {
        out = out.replace(`ok ${ack.line}\n`, '');
        acks.splice(acks.indexOf(ack), 1);
        ack.resolve();
      }
    }
  });
  const fault = (line: StandinFault) =>
    new Promise<void>((resolve) => {
      acks.push({ line, resolve });
      child.stdin?.write(`${line}\n`);
    });
  const forget = async () => void (await fetch(`${url}/__standin/forget`, { method: 'POST' })).arrayBuffer();
  return {
    url,
    child,
    statements: async () => (await (await fetch(`${url}/__standin/statements`)).json()) as string[],
    log: async () => (await (await fetch(`${url}/__standin/log`)).json()) as StandinStatement[],
    fault,
    forget,
    reset: async () => {
      for (const line of ['accept', 'delay 0', 'none'] as const) await fault(line);
      await forget();
    },
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Hosts as savedq's flags, in the order given: `--url a --url b`. */
export const urlFlags = (...hosts: Standin[]): string[] => hosts.flatMap((h) => ['--url', h.url]);
