import type { Readable, Writable } from 'node:stream';
import type { Row } from '../queries/types.js';
import type { Log } from '../report.js';
import { resolveColor, resolveTableWidth } from '../config.js';
import { drained } from '../drain.js';
import { chooseFormat, fieldsOfRows, render, type Format, type TableField } from '../output/index.js';

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
  /** Tables: one block a record (true), never (false), or when the table cannot fit the terminal. */
  readonly expanded?: boolean | undefined;
  /** CSV: text as it is, formulas included. */
  readonly csvRaw?: boolean | undefined;
}

/** Throws the abort reason (an InterruptedError) when the command has been interrupted. */
export function checkInterrupted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason;
}

/**
 * Writes a status line on standard error when a person is watching (or --verbose), never with --quiet.
 * A person watches when both outputs are the terminal: with standard output in a pipe, what the pipe
 * prints (`| jq`) shares the terminal with standard error, and a status line would land inside it.
 */
export function note(io: Io, options: CommonOptions, line: string): void {
  if (noting(io, options)) io.stderr.write(`${line}\n`);
}

/** Whether `note` writes its lines: worth asking before a line that costs something to make. */
export function noting(io: Io, options: CommonOptions): boolean {
  return !options.quiet && (options.verbose === true || (io.stderr.isTTY === true && io.stdout.isTTY === true));
}

/** The log of a command on standard error: `--quiet` leaves out what is only information. */
export function commandLog(io: Io, options: CommonOptions): Log {
  return {
    info: (line) => report(io, options, line),
    warn: (line) => io.stderr.write(`${line}\n`),
    error: (line) => io.stderr.write(`${line}\n`),
  };
}

/** Writes a line on standard error unless --quiet. */
export function report(io: Io, options: CommonOptions, line: string): void {
  if (!options.quiet) io.stderr.write(`${line}\n`);
}

/** The width a hint on standard error is wrapped to: its terminal's; none when it is not one. */
export function hintWidth(io: Io): number | undefined {
  return io.stderr.isTTY === true ? resolveTableWidth(io.stderr.columns, io.env) : undefined;
}

/** The width prose is wrapped to (`describe`, `check`, run's note of an empty answer): a terminal's; none when piped, so that each piece stays one line. */
export function proseWidth(io: Io): number | undefined {
  return io.stdout.isTTY === true ? resolveTableWidth(io.stdout.columns, io.env) : undefined;
}

/** Whether a command's standard output is in colour. */
export function colorOf(io: Io, options: CommonOptions): boolean {
  return resolveColor(options.color, io.stdout.isTTY === true, io.env);
}

/** The output format a command uses: -f among `allowed`, else a table on a terminal and JSON otherwise. */
export function outputFormat(io: Io, requested: string | undefined, allowed?: readonly Format[]): Format {
  return chooseFormat(requested, io.stdout.isTTY === true, allowed);
}

/**
 * Writes rows to standard output in a format, with colour and width following the terminal, piece by
 * piece as standard output takes them. Stops quietly when the reader has gone (`| head`). Rows of a
 * query that declares no fields show the columns they have.
 */
export async function writeRows(
  io: Io,
  options: CommonOptions,
  format: Format,
  rows: readonly Row[],
  fields: readonly TableField[],
): Promise<void> {
  const color = colorOf(io, options);
  const columns = fields.length > 0 ? fields : fieldsOfRows(rows);
  const width = resolveTableWidth(io.stdout.columns, io.env);
  for (const piece of await render(format, rows, { fields: columns, color, width, expanded: options.expanded, csvRaw: options.csvRaw, terminal: io.stdout.isTTY === true })) {
    if (!(await writeOut(io.stdout, piece))) return;
  }
}

/**
 * Writes to standard output (or an export's file), waiting while it is full. False when its reader has
 * gone: a closed pipe is not an error of savedq's (cli.ts exits quietly), only the end of its output.
 */
export function writeOut(stream: OutStream, text: string | Uint8Array): Promise<boolean> {
  if (stream.destroyed || stream.writableEnded) return Promise.resolve(false);
  return stream.write(text) ? Promise.resolve(true) : drained(stream);
}
