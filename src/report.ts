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
