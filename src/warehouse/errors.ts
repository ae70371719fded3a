import { QueryTimeoutError, SavedqError, WarehouseError } from '../errors.js';

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  type?: unknown;
  message?: unknown;
  clickhouseCode?: unknown;
  cause?: unknown;
}

const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed',
};

/** The first line of a message, without the engine's trailing "(CODE)" and stack noise, shortened. */
function firstLine(message: string): string {
  const line = (message.split('\n')[0] ?? '')
    .replace(/\s*\(version [^)]*\)\s*$/, '')
    // Older servers wrap the text: "Code: 115, e.displayText() = DB::Exception: …, e.what() = DB::Exception".
    .replace(/^Code: (\d+), e\.displayText\(\) = (DB::Exception: )?/, 'Code $1: ')
    .replace(/, e\.what\(\) = .*$/, '')
    .trim();
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

/**
 * Maps anything the ClickHouse client or the embedded engine throws to the savedq error family. The two
 * do not share classes (chdb's errors are not the client's ClickHouseError), so match on name, code and
 * type, in this one place.
 */
export function toWarehouseError(err: unknown, location: string): SavedqError {
  if (err instanceof SavedqError) return err;
  const e = (err ?? {}) as ErrorLike;
  const message = typeof e.message === 'string' ? e.message : String(err);
  const type = typeof e.type === 'string' ? e.type : '';
  const code = typeof e.code === 'string' ? e.code : '';
  const causeCode = typeof (e.cause as ErrorLike | undefined)?.code === 'string' ? (e.cause as ErrorLike).code : '';
  if (type === 'TIMEOUT_EXCEEDED' || code === '159' || /Timeout exceeded/i.test(message)) {
    return new QueryTimeoutError(`query on ${location} ran past its time limit.`, { cause: err });
  }
  const network = NETWORK_CODES[code] ?? NETWORK_CODES[causeCode as string];
  if (network) return new WarehouseError(`cannot reach ${location}: ${network}.`, { cause: err });
  if (/timeout/i.test(message) && e.name !== 'ClickHouseError') {
    return new QueryTimeoutError(`request to ${location} timed out.`, { cause: err });
  }
  if (
    ['AUTHENTICATION_FAILED', 'WRONG_PASSWORD', 'UNKNOWN_USER', 'REQUIRED_PASSWORD'].includes(type) ||
    ['516', '193', '192', '194'].includes(code) ||
    /Authentication failed|password is incorrect|Wrong password|Unknown user/i.test(message)
  ) {
    return new WarehouseError(`${location} refused the credentials.`, { cause: err });
  }
  if (type === 'NOT_ENOUGH_SPACE' || /not enough space|No space left on device/i.test(message)) {
    return new WarehouseError(`${location} is out of disk space: ${firstLine(message)}`, { cause: err });
  }
  if (type === 'SYNTAX_ERROR' || code === '62' || /Syntax error/i.test(message)) {
    // The engine quotes the query around the error; no SQL goes into a message.
    return new WarehouseError(`${location} could not parse the query (is the server older than ClickHouse 24?).`, { cause: err });
  }
  return new WarehouseError(`${location} failed: ${firstLine(message)}`, { cause: err });
}
