/**
 * The error family of savedq. The library throws these; each surface (CLI, HTTP) maps them once:
 * the CLI to an exit code and a short message, HTTP to a status and the JSON error envelope.
 */
export class SavedqError extends Error {
  /** Process exit code for the CLI. */
  readonly exitCode: number = 1;
  /** HTTP status for `savedq serve`. */
  readonly httpStatus: number = 500;
  /** One word for the HTTP error envelope. */
  readonly code: string = 'internal';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad input: unknown parameter, missing or malformed value, bad flag. Nothing was run. */
export class InputError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 400;
  override readonly code = 'bad_request';
}

/** An endpoint (or table) that does not exist. */
export class NotFoundError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 404;
  override readonly code = 'not_found';
}

/** The warehouse (embedded engine or ClickHouse server) failed or could not be reached. */
export class WarehouseError extends SavedqError {
  override readonly exitCode = 1;
  override readonly httpStatus = 502;
  override readonly code = 'warehouse_error';
}

/** A query ran past its time limit. */
export class QueryTimeoutError extends SavedqError {
  override readonly exitCode = 1;
  override readonly httpStatus = 504;
  override readonly code = 'timeout';
}

/** The embedded data directory is held by another process past the wait bound. */
export class BusyError extends SavedqError {
  override readonly exitCode = 1;
  override readonly httpStatus = 503;
  override readonly code = 'busy';
}

/** Interrupted by SIGINT / SIGTERM. */
export class InterruptedError extends SavedqError {
  override readonly exitCode = 130;
  override readonly httpStatus = 503;
  override readonly code = 'interrupted';
}

/** A saved query's definition is broken (bad header, undeclared parameter, a clash): fix the file. */
export class DefinitionError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 500;
  override readonly code = 'bad_definition';
}
