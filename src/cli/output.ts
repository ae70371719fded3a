import { fstatSync, writeSync } from 'node:fs';
import type { Command } from 'commander';
import type { OutStream } from '../commands/io.js';
import { wrapped } from '../output/wrap.js';

/**
 * What became of standard output: a reader that goes away (`| head -n 1`) ends savedq's output, quietly,
 * and savedq exits 141 as Unix tools killed by SIGPIPE do; any other failure to write is an error.
 */
const output: { readerGone: boolean; failure?: NodeJS.ErrnoException } = { readerGone: false };

const onStdoutError = (err: NodeJS.ErrnoException): void => {
  if (err.code === 'EPIPE') output.readerGone = true;
  else output.failure ??= err;
};
// Nothing to be done about a closed standard error but to stop writing to it.
const onStderrError = (): void => undefined;

/**
 * Standard output or error as the CLI's commands meet it (an OutStream), Node's stream of it made only
 * when something beyond writing text to a pipe or a file is asked of it. For a pipe, Node's stream is a
 * net.Socket: loading the stream and net modules is much of a cache hit, to write one answer
 * (docs/performance.md).
 *
 * A pipe, a socket or a file is no terminal, which its type (fstat) tells without the tty module (which
 * loads net); anything else (a terminal, /dev/null, a descriptor that is not open) is Node's stream from
 * the first question. Text for a pipe, a socket or a file is written to the descriptor as Node's own
 * stream for a file does, synchronously and whole; when the descriptor would block (another process
 * made it non-blocking), the stream takes the rest and every write after it. A failure to write is
 * told as the stream's `error` event would tell it, and what is written after it is dropped.
 */
class Output {
  readonly #fd: 1 | 2;
  readonly #make: () => NodeJS.WriteStream;
  readonly #onError: (err: NodeJS.ErrnoException) => void;
  #stream: NodeJS.WriteStream | undefined;
  /** Whether text goes straight to the descriptor (a pipe, a socket, a file), until the stream is made. */
  #direct: boolean | undefined;
  #failed = false;
  /** What commands are given: this Output's answers while there is no stream, the stream's after. */
  readonly view: OutStream;

  constructor(fd: 1 | 2, make: () => NodeJS.WriteStream, onError: (err: NodeJS.ErrnoException) => void) {
    this.#fd = fd;
    this.#make = make;
    this.#onError = onError;
    const own: Partial<Record<PropertyKey, () => unknown>> = {
      fd: () => fd,
      isTTY: () => (this.#isDirect() ? false : this.stream().isTTY),
      columns: () => (this.#isDirect() ? undefined : this.stream().columns),
      destroyed: () => this.#failed,
      writableEnded: () => false,
      write: () => (text: string) => this.#write(text),
    };
    this.view = new Proxy(Object.create(null) as OutStream, {
      get: (_, key) => {
        // Every write goes through #write, which fits standard error's lines to a terminal.
        if (key === 'write') return (text: string | Uint8Array) => (typeof text === 'string' ? this.#write(text) : this.stream().write(text));
        const answer = own[key];
        if (answer !== undefined && this.#stream === undefined) return answer();
        const stream = this.stream();
        const value: unknown = Reflect.get(stream, key, stream);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(stream) : value;
      },
      set: (_, key, value) => Reflect.set(this.stream(), key, value),
      has: (_, key) => key in this.stream(),
    });
  }

  /** Node's stream of the descriptor, made now if it was not yet (what every write goes through from now on). */
  stream(): NodeJS.WriteStream {
    if (this.#stream === undefined) {
      this.#stream = this.#make();
      this.#stream.on('error', this.#onError);
    }
    return this.#stream;
  }

  /**
   * Standard error's text for a terminal: each whole line wider than it wrapped at word breaks, its
   * later lines indented by two, rather than cut mid-word by the terminal. A progress line (one that
   * returns the cursor, `\r`) is left as it is; so is all of it when it is no terminal.
   */
  #fitted(text: string): string {
    const stream = this.stream();
    const columns = stream.isTTY ? stream.columns : undefined;
    if (columns === undefined || columns <= 0 || text.includes('\r')) return text;
    const lines = text.split('\n');
    if (lines.every((line) => line.length <= columns)) return text;
    return lines.map((line) => (line.length <= columns ? line : wrapped(line, 0, 2, columns))).join('\n');
  }

  #isDirect(): boolean {
    if (this.#direct === undefined) {
      try {
        const file = fstatSync(this.#fd);
        this.#direct = file.isFIFO() || file.isSocket() || file.isFile();
      } catch {
        this.#direct = false; // not open: Node's stream knows what to make of it
      }
    }
    return this.#direct;
  }

  #write(text: string): boolean {
    if (!this.#isDirect()) return this.stream().write(this.#fd === 2 ? this.#fitted(text) : text);
    if (this.#failed) return true;
    const bytes = Buffer.from(text);
    let written = 0;
    try {
      while (written < bytes.length) written += writeSync(this.#fd, bytes, written);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') return this.stream().write(bytes.subarray(written));
      this.#failed = true;
      this.#onError(err as NodeJS.ErrnoException);
    }
    return true;
  }
}

const stdout = new Output(1, () => process.stdout, onStdoutError);
const stderr = new Output(2, () => process.stderr, onStderrError);

/** The CLI's standard output and error (see Output). */
export const standardOutput = { stdout: stdout.view, stderr: stderr.view };

/**
 * Commander's own output (help, the version, its errors) through the CLI's standard output and error,
 * for this command and its subcommands: help read by `| head -n 1` ends quietly as any output does, and
 * a pipe's width is known without Node's stream of it.
 */
export function commanderThrough(command: Command): void {
  command.configureOutput({
    writeOut: (text) => void stdout.view.write(text),
    writeErr: (text) => void stderr.view.write(text),
    getOutHelpWidth: () => (stdout.view.isTTY === true && stdout.view.columns !== undefined ? stdout.view.columns : 80),
    getErrHelpWidth: () => (stderr.view.isTTY === true && stderr.view.columns !== undefined ? stderr.view.columns : 80),
  });
  command.commands.forEach(commanderThrough);
}

/**
 * From now on, standard output and error are Node's streams: for a command that runs for long (`serve`,
 * `mcp`), whose writes to a slow reader must wait in the stream, not stop the event loop.
 */
export function streamsFromNowOn(): void {
  stdout.stream();
  stderr.stream();
}

/** Whether standard output's reader went away: whatever failed after that, nobody is reading. */
export function readerGone(): boolean {
  return output.readerGone;
}

/** The exit code once standard output has its say: 141 when its reader went away. */
export function afterOutput(code: number, stderr: NodeJS.WritableStream): number {
  if (output.readerGone) return 141;
  if (output.failure && code === 0) {
    stderr.write(`savedq: cannot write the output: ${output.failure.code ?? output.failure.message}.\n`);
    return 1;
  }
  return code;
}
