import type { Readable, Writable } from 'node:stream';

/** A writable stream that may be a terminal. */
export type OutStream = Writable & { isTTY?: boolean; columns?: number };

/** The streams and environment a command talks to; tests pass their own. */
export interface Io {
  readonly stdin: Readable & { isTTY?: boolean };
  readonly stdout: OutStream;
  readonly stderr: OutStream;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Options every command shares. */
export interface CommonOptions {
  /** Colour: false for --no-color; undefined follows NO_COLOR / FORCE_COLOR / the terminal. */
  readonly color?: boolean | undefined;
  /** Say more on standard error (cache status, timings) even when it is not a terminal. */
  readonly verbose?: boolean | undefined;
  /** Say nothing on standard error but errors. */
  readonly quiet?: boolean | undefined;
  /** Aborted on SIGINT/SIGTERM: the command stops at its next safe point. */
  readonly signal?: AbortSignal | undefined;
}

/** Throws the abort reason (an InterruptedError) when the command has been interrupted. */
export function checkInterrupted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason;
}

/** Writes a status line on standard error when a person is watching (or --verbose), never with --quiet. */
export function note(io: Io, options: CommonOptions, line: string): void {
  if (options.quiet) return;
  if (options.verbose || io.stderr.isTTY) io.stderr.write(`${line}\n`);
}

/** Writes a line on standard error unless --quiet. */
export function report(io: Io, options: CommonOptions, line: string): void {
  if (!options.quiet) io.stderr.write(`${line}\n`);
}
