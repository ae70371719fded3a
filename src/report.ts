import { fstatSync, write } from 'node:fs';
import { isoNow } from './time.js';

/**
 * What the library tells the surface that made it, as it happens, so that nothing waits in shared state
 * for whoever asks next: the CLI writes it on standard error, `serve` in its log.
 */
export interface Reporter {
  /** Something the user should know that did not stop the work: a broken definition skipped, a cache not used. */
  warn(message: string): void;
  /** What a person watching may want to know: a command waiting for a data directory another process holds. */
  note(message: string): void;
}

/**
 * A log with levels, for the commands that run on (`serve`, `savedq mcp`) or report each piece of
 * their work (`warm`): `--quiet` leaves out `info`, never a warning or an error, whatever it says.
 */
export interface Log {
  /** What was done: a request answered, a call refreshed, a reload. */
  info(line: string): void;
  /** What the operator should know that did not stop the work: a connection refused, a query left out. */
  warn(line: string): void;
  /** What failed: an internal error, a refresh or a reload that did not happen. */
  error(line: string): void;
}

/** Tells no one (tests, and the library used from code that does not care). */
export const SILENT: Reporter = { warn: () => undefined, note: () => undefined };

/**
 * The server's log on standard error, each line with its time (one line a request, and what the server
 * does: reloads, warming, stopping): gathered and written in batches (logWriter), so a busy server
 * does not stop to write each line. With --quiet, warnings and errors only, by their level.
 */
export function serverLog(stderr: NodeJS.WritableStream, quiet: boolean): ServerLog {
  const write = logWriter(stderr);
  const always = (line: string) => write(`${isoNow()} ${line}\n`);
  return { info: (line) => (quiet ? undefined : always(line)), warn: always, error: always, always };
}

/** A log in a file is written this often at most, unless this many characters wait (lines are mostly ASCII). */
const LOG_FLUSH_MS = 100;
const LOG_FLUSH_CHARS = 64 * 1024;

/**
 * How the log's lines reach standard error, in batches joined once each. To a terminal, a pipe
 * (written without waiting) or a test's stream: at the end of the event loop's turn. To a file, which
 * Node writes synchronously, the event loop waiting on the disk (a service manager's log file,
 * `2>> serve.log`): by libuv's threads instead, in order, one write at a time and at most every
 * LOG_FLUSH_MS (or once LOG_FLUSH_CHARS characters wait): under load, a write a turn would keep those
 * threads busy on a core the requests need. The process does not exit before the last is written; a
 * process killed loses at most that last tenth of a second.
 */
function logWriter(stderr: NodeJS.WritableStream): (line: string) => void {
  let pending: string[] = [];
  const take = (): string => {
    const text = pending.join('');
    pending = [];
    return text;
  };
  // The process's own standard error (Node's stream of it, or the CLI's view of it) carries its descriptor.
  if ((stderr as { fd?: unknown }).fd !== 2 || !isFile(2)) {
    return (line) => {
      if (pending.length === 0) setImmediate(() => stderr.write(take()));
      pending.push(line);
    };
  }
  let waiting = 0;
  let writing = false;
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    clearTimeout(timer);
    timer = undefined;
    if (writing || pending.length === 0) return;
    waiting = 0;
    writing = true;
    write(2, take(), () => {
      writing = false;
      if (waiting >= LOG_FLUSH_CHARS) flush();
      else if (pending.length > 0) timer ??= setTimeout(flush, LOG_FLUSH_MS);
    });
  };
  return (line) => {
    pending.push(line);
    waiting += line.length;
    if (writing) return;
    if (waiting >= LOG_FLUSH_CHARS) flush();
    else timer ??= setTimeout(flush, LOG_FLUSH_MS);
  };
}

function isFile(fd: number): boolean {
  try {
    return fstatSync(fd).isFile();
  } catch {
    return false;
  }
}

/** The server's log by level; `always`, a line of information even with --quiet (the address it listens on). */
export interface ServerLog extends Log {
  always(line: string): void;
}
