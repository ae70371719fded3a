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

/** Tells no one (tests, and the library used from code that does not care). */
export const SILENT: Reporter = { warn: () => undefined, note: () => undefined };
