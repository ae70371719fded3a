import { CommanderError, type Command } from 'commander';
import type { Io } from '../commands/io.js';
import { hintWidth } from '../commands/io.js';
import { InterruptedError, SavedqError } from '../errors.js';
import { hintsAfter, type CatalogOf } from './guess.js';
import { readerGone } from './output.js';

/**
 * The one place errors become messages and exit codes: commander's (exit 2, with savedq's guesses),
 * savedq's own (its message and its exit code; --debug adds its cause's stack), and anything else
 * (exit 1, "unexpected error"). `close` runs last, whatever happened.
 */
export async function main(program: Command, argv: string[], io: Io, catalogOf: CatalogOf, close: () => Promise<void>): Promise<number> {
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (readerGone()) return 0; // whatever failed after the reader went, nobody is reading
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0) return 0;
      const { guess, names } = await hintsAfter(err, catalogOf);
      if (guess !== undefined) io.stderr.write(`(Did you mean ${guess}?)\n`);
      if (names !== undefined) {
        const { wrapped } = await import('../output/wrap.js');
        io.stderr.write(`${wrapped(`(the saved queries: ${names}; savedq list shows what each takes)`, 0, 1, hintWidth(io))}\n`);
      }
      return 2;
    }
    const debug = program.opts<{ debug?: boolean }>().debug === true;
    if (err instanceof InterruptedError) return err.exitCode;
    if (err instanceof SavedqError) {
      if (err.silent) return err.exitCode;
      io.stderr.write(`savedq: ${err.message}\n`);
      if (debug && err.cause instanceof Error) io.stderr.write(`${err.cause.stack ?? err.cause.message}\n`);
      return err.exitCode;
    }
    io.stderr.write(`savedq: unexpected error: ${err instanceof Error ? err.message : String(err)}\n`);
    if (debug && err instanceof Error) io.stderr.write(`${err.stack}\n`);
    return 1;
  } finally {
    await close().catch(() => undefined);
  }
}
