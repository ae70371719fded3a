/**
 * The error family of savedq. The library throws these; each surface maps them once: the CLI to an exit
 * code and a short message (cli/main.ts), HTTP to a status and the JSON error envelope (http/answers.ts), MCP
 * to a tool result with isError and the message a caller may read (mcp/session.ts).
 */
export class SavedqError extends Error {
  /** Process exit code for the CLI. */
  readonly exitCode: number = 1;
  /** HTTP status for `savedq serve`. */
  readonly httpStatus: number = 500;
  /** One word for the HTTP error envelope. */
  readonly code: string = 'internal';
  /**
   * What an HTTP caller is told: what went wrong for it, never a path, a server's address or a user
   * name (the server's log keeps the whole message). By default the message itself.
   */
  readonly forCaller: string;
  /** The command said all there was to say before it failed (`--quiet` asked for silence): the CLI prints nothing, only exits. */
  readonly silent: boolean;

  constructor(message: string, options?: { cause?: unknown; forCaller?: string; silent?: boolean }) {
    // An answer, not a fault: it says all it has to say in its message, and no surface shows its stack
    // (--debug shows its cause's). So it captures none: walking every frame and every await behind a
    // refused request is much of what a refusal costs serve.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message, options);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.name = new.target.name;
    this.forCaller = options?.forCaller ?? message;
    this.silent = options?.silent === true;
  }
}

/** Bad input: unknown parameter, missing or malformed value, bad flag. Nothing was run. */
export class InputError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 400;
  override readonly code: string = 'bad_request';
}

/** SQL sent to a saved query that does not take it (no `sandbox: true` in its header). */
export class SandboxDisabledError extends InputError {
  override readonly code = 'sandbox_disabled';
}

/** A caller's SQL that reaches for something beyond the query's answer, or takes a form the sandbox refuses (docs/sandboxing.md). */
export class SandboxRefusedError extends InputError {
  override readonly code = 'sandbox_refused';
  /** The saved query the SQL was sent to, once known (a metric's label). */
  query: string | undefined;
}

/** A caller's SQL the engine could not parse or run over the query's answer (an unknown column, a type error). */
export class BadSqlError extends InputError {
  override readonly code = 'bad_sql';
}

/** A query passed a limit its definition sets (`limits:`): a narrower call may answer. */
export class LimitError extends InputError {
  override readonly code = 'limit_exceeded';
}

/** A saved query, a table or an HTTP path that does not exist. */
export class NotFoundError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 404;
  override readonly code = 'not_found';
}

/** A version of a saved query past its `sunset:`: it answers no more (RFC 8594); the message names the current version. */
export class GoneError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 410;
  override readonly code = 'gone';
}

/** A saved query's definition is broken (bad header, undeclared parameter, a clash): fix the file. */
export class DefinitionError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 500;
  override readonly code = 'bad_definition';
  /** The definition files the error is about (their problems are in its message). */
  readonly files: readonly string[];

  constructor(message: string, options?: { cause?: unknown; files?: readonly string[]; forCaller?: string }) {
    super(message, { ...options, forCaller: options?.forCaller ?? 'this saved query cannot run; the server log says why.' });
    this.files = options?.files ?? [];
  }
}

/** What the engine said of a failure, parsed once (warehouse/errors.ts) for whoever needs to know. */
export interface EngineFailure {
  /** ClickHouse's error code (60 = UNKNOWN_TABLE, …), when there is one. */
  readonly code?: number;
  /** ClickHouse's error type (`UNKNOWN_TABLE`, `SYNTAX_ERROR`, …), when there is one. */
  readonly type?: string;
  /** The first line of the engine's message, as it gave it. */
  readonly message: string;
}

/** The warehouse (embedded engine or ClickHouse server) failed or could not be reached. */
export class WarehouseError extends SavedqError {
  override readonly exitCode = 1;
  override readonly httpStatus = 502;
  override readonly code = 'warehouse_error';
  /** The engine's own error, when the failure is one (not a lost connection, say). */
  readonly engine: EngineFailure | undefined;

  constructor(message: string, options?: { cause?: unknown; engine?: EngineFailure | undefined; forCaller?: string }) {
    super(message, { ...options, forCaller: options?.forCaller ?? 'the warehouse failed; the server log says why.' });
    this.engine = options?.engine;
  }
}

/**
 * No host of the warehouse answered: refused, unreachable, reset, or down since its probe failed. A
 * call with an answer in the store may then be answered with it, marked stale (calls/runner.ts).
 */
export class WarehouseUnreachableError extends WarehouseError {}

/** A query ran past its time limit. */
export class QueryTimeoutError extends SavedqError {
  override readonly exitCode = 1;
  override readonly httpStatus = 504;
  override readonly code = 'timeout';

  /** The engine stopped the query at its time limit (not a request that went unanswered). */
  readonly ranPastLimit: boolean;

  constructor(message: string, options?: { cause?: unknown; forCaller?: string; ranPastLimit?: boolean }) {
    super(message, { ...options, forCaller: options?.forCaller ?? 'the query ran past its time limit.' });
    this.ranPastLimit = options?.ranPastLimit === true;
  }
}

/** The embedded data directory is held by another process past the wait bound: try again later. */
export class BusyError extends SavedqError {
  override readonly exitCode = 1;
  override readonly httpStatus = 503;
  override readonly code = 'busy';
  /** When to try again, for HTTP's Retry-After. */
  readonly retryAfterSeconds = 5;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, forCaller: 'the data directory is in use by another process; try again shortly.' });
  }
}

/** serve: more calls wait for the engine than --max-queue lets wait: try again shortly. */
export class OverloadedError extends SavedqError {
  override readonly exitCode = 1;
  override readonly httpStatus = 503;
  override readonly code = 'overloaded';
  /** When to try again, for HTTP's Retry-After. */
  readonly retryAfterSeconds = 1;
}

/** Interrupted by SIGINT / SIGTERM. */
export class InterruptedError extends SavedqError {
  override readonly exitCode = 130;
  override readonly httpStatus = 503;
  override readonly code = 'interrupted';
}

/** Some refreshes of a warm failed (each is reported on its own): exit 1 after the report. */
export class WarmFailedError extends SavedqError {}

/** Some cases of `savedq test` failed (each is reported on its own): exit 1 after the report. */
export class TestsFailedError extends SavedqError {}

/** `check --against`: a change to a saved query that breaks its callers, its version not raised (exit 1). */
export class ChangesBreakError extends SavedqError {}

/**
 * `savedq alerts check`: an alert is firing or in error, or an alert file is broken: exit 1. Silent
 * with --quiet (cron mails what a command prints; the alert told its people itself).
 */
export class AlertsNotOkError extends SavedqError {}

/** HTTP: no credential, an unknown API key, or a token that does not verify. */
export class UnauthorizedError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 401;
  override readonly code = 'unauthorized';
}

/** HTTP: a valid credential asking for what it may not have (a query outside a token's scopes, a fixed parameter changed). */
export class ForbiddenError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 403;
  override readonly code = 'forbidden';
}

/** HTTP: a caller past its rate limit. */
export class RateLimitedError extends SavedqError {
  override readonly exitCode = 1;
  override readonly httpStatus = 429;
  override readonly code = 'rate_limited';
  /** When to try again (whole seconds, at least 1), for Retry-After. */
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** HTTP: a method the route does not answer (its Allow header names those it does). */
export class MethodNotAllowedError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 405;
  override readonly code = 'method_not_allowed';
  /** The methods the path takes, for the answer's Allow header. */
  readonly allowed: string;

  constructor(message: string, allowed = 'GET, HEAD') {
    super(message);
    this.allowed = allowed;
  }
}

/** HTTP: a request URL over the length the server reads. */
export class UriTooLongError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 414;
  override readonly code = 'uri_too_long';
}

/** HTTP: a request body over the size the server reads. */
export class PayloadTooLargeError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 413;
  override readonly code = 'payload_too_large';
}

/** HTTP: a request body in a format the route does not read. */
export class UnsupportedMediaTypeError extends SavedqError {
  override readonly exitCode = 2;
  override readonly httpStatus = 415;
  override readonly code = 'unsupported_media_type';
}
