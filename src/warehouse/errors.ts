import { errnoText } from '../errno.js';
import { QueryTimeoutError, SavedqError, WarehouseError, WarehouseUnreachableError, type EngineFailure } from '../errors.js';

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  type?: unknown;
  message?: unknown;
  clickhouseCode?: unknown;
  cause?: unknown;
}

/** The errno codes of a connection that failed. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT', 'EPIPE']);

/** Engine errors about credentials (516 AUTHENTICATION_FAILED, 192–194 unknown user or wrong password). */
const CREDENTIAL_CODES = new Set([192, 193, 194, 516]);
const CREDENTIAL_TYPES = ['AUTHENTICATION_FAILED', 'WRONG_PASSWORD', 'UNKNOWN_USER', 'REQUIRED_PASSWORD'];
const TIMEOUT_CODE = 159;
const SYNTAX_ERROR_CODE = 62;

/** The first line of a message, without the engine's trailing "(version …)", and the wrapping of older servers. */
function firstLine(message: string): string {
  return (message.split('\n')[0] ?? '')
    .replace(/\s*\(version [^)]*\)\s*$/, '')
    // Older servers wrap the text: "Code: 115, e.displayText() = DB::Exception: …, e.what() = DB::Exception".
    .replace(/^Code: (\d+), e\.displayText\(\) = (DB::Exception: )?/, 'Code $1: ')
    .replace(/, e\.what\(\) = .*$/, '')
    .trim();
}

/**
 * What the engine said of a statement it refused, without the statement: it quotes the query back as
 * savedq rewrote it ("In scope SELECT … SETTINGS …", "while executing 'FUNCTION …'"), which is neither
 * the user's SQL nor theirs to read.
 */
export function engineReason(message: string): string {
  return firstLine(message)
    .replace(/\.? In scope .*?(?=\. Maybe you meant|$)/i, '')
    .replace(/: while executing '.*$/, '')
    // A syntax error quotes the statement from where it failed: its line and column say where.
    .replace(/(\(line \d+, col \d+\)):.*$/, '$1')
    .trim();
}

/** A reason as a caller of serve or an agent may read it: no path of this machine, no address. */
function forCallers(reason: string): string {
  return reason.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s'"`)]+/gi, '<address>').replace(/(?<![\w.])\/(?:[\w.@-]+\/)*[\w.@-]+/g, '<path>');
}

function shortened(line: string): string {
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

/**
 * What the engine said, when an error is one of the engine's: the client's ClickHouseError and the
 * embedded engine's errors (which are not instances of it) both carry a code and a type, matched here by
 * shape.
 */
function engineFailure(e: ErrorLike, message: string): EngineFailure | undefined {
  const raw = e.clickhouseCode ?? e.code;
  const code = typeof raw === 'number' || (typeof raw === 'string' && /^\d+$/.test(raw)) ? Number(raw) : undefined;
  const type = typeof e.type === 'string' && e.type !== '' ? e.type : undefined;
  if (code === undefined && type === undefined) return undefined;
  return { ...(code !== undefined ? { code } : {}), ...(type !== undefined ? { type } : {}), message: firstLine(message) };
}

/** The errno code of a connection that failed (on the error or its cause), if it is one. */
function networkCode(err: unknown): string | undefined {
  const e = (err ?? {}) as ErrorLike;
  const causeCode = (e.cause as ErrorLike | undefined)?.code;
  return [e.code, causeCode].find((c): c is string => typeof c === 'string' && NETWORK_CODES.has(c));
}

/**
 * A streamed answer's failure after its first part, as the caller is to read it: a connection that
 * failed then was cut half-way through the answer, the host having been reached (not 'cannot reach').
 */
export function cutOff(err: unknown, location: string): SavedqError {
  const network = networkCode(err instanceof WarehouseUnreachableError ? err.cause : err);
  if (network === undefined) return toWarehouseError(err, location);
  return new WarehouseError(`the answer of ${location} was cut off half-way: ${errnoText({ code: network })}.`, { cause: err, forCaller: "the warehouse's answer was cut off half-way." });
}

/**
 * Maps anything the ClickHouse client or the embedded engine throws to the savedq error family: the one
 * place engine errors are classified (as clickhouse-js's parseError is for the client). Above the
 * warehouse, code reads a WarehouseError's `engine` rather than the raw error.
 */
export function toWarehouseError(err: unknown, location: string): SavedqError {
  if (err instanceof SavedqError) return err;
  const e = (err ?? {}) as ErrorLike;
  const message = typeof e.message === 'string' ? e.message : String(err);
  const engine = engineFailure(e, message);
  const options = { cause: err, engine };
  if (engine?.type === 'TIMEOUT_EXCEEDED' || engine?.code === TIMEOUT_CODE || /Timeout exceeded/i.test(message)) {
    return new QueryTimeoutError(`query on ${location} ran past its time limit.`, { cause: err, ranPastLimit: true });
  }
  const network = networkCode(err);
  if (network !== undefined) {
    const why = errnoText({ code: network });
    return new WarehouseUnreachableError(`cannot reach ${location}: ${why}.`, { ...options, forCaller: `the warehouse cannot be reached (${why}).` });
  }
  if (/timeout/i.test(message) && e.name !== 'ClickHouseError') {
    return new QueryTimeoutError(`request to ${location} timed out.`, { cause: err, forCaller: 'the warehouse did not answer in time.' });
  }
  if (
    CREDENTIAL_TYPES.includes(engine?.type ?? '') ||
    CREDENTIAL_CODES.has(engine?.code ?? 0) ||
    /Authentication failed|password is incorrect|Wrong password|Unknown user/i.test(message)
  ) {
    return new WarehouseError(`${location} refused the credentials.`, { ...options, forCaller: "the warehouse refused savedq's credentials." });
  }
  if (engine?.type === 'NOT_ENOUGH_SPACE' || /not enough space|No space left on device/i.test(message)) {
    return new WarehouseError(`${location} is out of disk space: ${shortened(firstLine(message))}`, { ...options, forCaller: 'the warehouse is out of disk space.' });
  }
  if (engine?.type === 'SYNTAX_ERROR' || engine?.code === SYNTAX_ERROR_CODE || /Syntax error/i.test(message)) {
    // The engine quotes the query around the error; no SQL goes into a message.
    return new WarehouseError(`${location} could not parse the query (is the server older than ClickHouse 24?).`, options);
  }
  const failed = new WarehouseError(`${location} failed: ${shortened(engineReason(message))}`, options);
  // The engine refused what the saved query asks (a function that fails, a type that does not fit):
  // the query's own failure, which its caller may read and act on.
  if (!isRefusal(failed) || engine === undefined) return failed;
  return new WarehouseError(failed.message, { ...options, forCaller: `the query failed in the engine: ${engineSays(engine, { forCaller: true })}.` });
}

/**
 * What the engine said of a statement, as one line: its reason without the statement it quotes (and,
 * for a caller, without paths and addresses), at most 300 characters, then its kind.
 */
export function engineSays(engine: EngineFailure, { forCaller = false } = {}): string {
  const reason = engineReason(engine.message);
  return `${shortened(forCaller ? forCallers(reason) : reason)} (${engine.type ?? `code ${engine.code ?? '?'}`})`;
}

/**
 * Engine errors that say nothing about a statement: an unknown database, time, credentials, the
 * network, memory, disk, too many parts, a cancelled query.
 */
const NOT_ABOUT_THE_STATEMENT = new Set([81, 159, 192, 193, 194, 209, 210, 241, 243, 252, 394, 516]);

/**
 * Whether a failure is the engine refusing what it was asked (a query it cannot plan, a line an insert
 * cannot take), rather than the warehouse failing (unreachable, out of disk, out of time).
 */
export function isRefusal(err: unknown): boolean {
  const engine = err instanceof WarehouseError ? err.engine : undefined;
  if (engine === undefined) return false;
  if (engine.code !== undefined) return !NOT_ABOUT_THE_STATEMENT.has(engine.code);
  return ![...CREDENTIAL_TYPES, 'UNKNOWN_DATABASE', 'TIMEOUT_EXCEEDED', 'NOT_ENOUGH_SPACE', 'MEMORY_LIMIT_EXCEEDED', 'TOO_MANY_SIMULTANEOUS_QUERIES'].includes(engine.type ?? '');
}

/** Whether a failure is the engine unable to parse a statement (62, SYNTAX_ERROR). */
export function isSyntaxError(err: unknown): boolean {
  return err instanceof WarehouseError && (err.engine?.code === SYNTAX_ERROR_CODE || err.engine?.type === 'SYNTAX_ERROR');
}

/** ClickHouse's network errors (209 SOCKET_TIMEOUT, 210 NETWORK_ERROR): between its hosts, not about the statement. */
const NETWORK_ENGINE_CODES = new Set([209, 210]);

/**
 * Whether a failure is the network's rather than the statement's, so another host of the warehouse may
 * answer it: a host that refused, did not connect in time, or reset or closed the connection before
 * the answer was whole; ClickHouse's own network errors; a proxy in front of it answering 502, 503 or
 * 504 (the client keeps no status: an answer that is not ClickHouse's error and says so is one).
 */
export function isNetworkFailure(err: unknown): boolean {
  if (err instanceof WarehouseUnreachableError) return true;
  if (!(err instanceof WarehouseError)) return false;
  if (err.engine?.code !== undefined) return NETWORK_ENGINE_CODES.has(err.engine.code);
  if (err.engine !== undefined) return false;
  const cause = err.cause as ErrorLike | undefined;
  const message = typeof cause?.message === 'string' ? cause.message : '';
  return cause?.code === 'ERR_STREAM_PREMATURE_CLOSE' || /socket hang up|premature close/i.test(message) || /^\s*(<[^>]*>\s*)*(502|503|504)\b|Bad Gateway|Service (Temporarily )?Unavailable|Gateway Time-?out/i.test(message);
}

/** Whether a failure is the engine not knowing a table (60, UNKNOWN_TABLE). */
export function isUnknownTable(err: unknown): boolean {
  return err instanceof WarehouseError && (err.engine?.code === 60 || err.engine?.type === 'UNKNOWN_TABLE');
}

/** Whether a failure is the engine's RE2 refusing a pattern (427, CANNOT_COMPILE_REGEXP). */
export function isBadPattern(err: unknown): boolean {
  return err instanceof WarehouseError && (err.engine?.type === 'CANNOT_COMPILE_REGEXP' || /cannot compile re2/i.test(err.engine?.message ?? ''));
}
