import type { Readable, Writable } from 'node:stream';
import type { FieldDefinition, Row } from '../queries/types.js';
import { chooseFormat, render, useColor, type Format } from '../output/index.js';

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

/** Warnings the library handed back, one line each on standard error (unless --quiet). */
export function warn(io: Io, options: CommonOptions, warnings: readonly string[]): void {
  for (const warning of warnings) report(io, options, `warning: ${warning}`);
}

/** The output format a command uses: -f, else a table on a terminal and JSON otherwise. */
export function outputFormat(io: Io, requested: string | undefined): Format {
  return chooseFormat(requested, io.stdout.isTTY === true);
}

/** Writes rows to standard output in a format, with colour and width following the terminal. */
export async function writeRows(
  io: Io,
  options: CommonOptions,
  format: Format,
  rows: readonly Row[],
  fields: readonly Pick<FieldDefinition, 'name' | 'type'>[],
): Promise<void> {
  const color = useColor(options.color, io.stdout.isTTY === true, io.env);
  io.stdout.write(await render(format, rows, { fields, color, width: io.stdout.columns }));
}
