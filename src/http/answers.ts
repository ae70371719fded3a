import type { ServerResponse } from 'node:http';
import { BusyError, MethodNotAllowedError, OverloadedError, RateLimitedError, SavedqError, UnauthorizedError } from '../errors.js';
import type { Log } from '../report.js';

/** Every JSON answer's type. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** Answers with a JSON body (an object, or JSON text already serialised). */
export function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': JSON_TYPE,
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** The JSON error envelope every refusal is sent in (the OpenAPI document declares it). */
export function errorBody(code: string, message: string): object {
  return { error: { code, message } };
}

/**
 * The one place errors become HTTP answers: the family's status and code in the JSON envelope (and
 * Retry-After for a busy data directory); anything else is a 500 with no detail, logged. `headers`, the
 * answer's besides its own (the request id): all of them go in one `writeHead`, as Node checks each
 * header set before it once more.
 */
export function sendError(res: ServerResponse, err: unknown, log: Log, headers: Record<string, string> = {}): void {
  if (!(err instanceof SavedqError)) {
    log.error(`internal error: ${err instanceof Error ? err.message : String(err)}`);
    send(res, 500, errorBody('internal', 'internal error.'), headers);
    return;
  }
  // Which file, which address, which user, what the engine quoted of the SQL: for the server's owner
  // (the log), not its callers, who are told what went wrong for them.
  if (err.forCaller !== err.message) log.error(err.message);
  const own = { ...headers };
  if (err instanceof MethodNotAllowedError) own['Allow'] = err.allowed;
  if (err instanceof UnauthorizedError) own['WWW-Authenticate'] = 'Bearer';
  if (err instanceof BusyError || err instanceof OverloadedError || err instanceof RateLimitedError) own['Retry-After'] = String(err.retryAfterSeconds);
  send(res, err.httpStatus, errorBody(err.code, err.forCaller), own);
}

/** The longest request URL serve reads: past it, 414 (a caller's SQL that long goes in a POST). */
export const MAX_URL_LENGTH = 8192;

/**
 * Whether what Node's parser held when the headers ran over its limit (16 KiB, the request line
 * included) is a request line still under way: the URL too long, not the headers. `packet` is the
 * piece of the request the parser was reading: a request's beginning, or a later piece of its line.
 */
export function requestLineTooLong(packet: Buffer | undefined): boolean {
  if (packet === undefined) return false;
  const end = packet.indexOf('\r\n');
  const line = packet.subarray(0, end === -1 ? packet.length : end);
  return /^[A-Z]+ /.test(line.subarray(0, 16).toString('latin1')) ? line.length > MAX_URL_LENGTH : end === -1 || end > MAX_URL_LENGTH;
}

/**
 * The answer Node itself gives a request it could not parse (it never reaches a route): a request line
 * too long 414, as a URL over MAX_URL_LENGTH is, whatever its length; other oversized headers 431;
 * headers too slow 408; anything else 400, in the same envelope.
 */
export function clientErrorAnswer(errCode: string | undefined, headerTimeoutSeconds: number, lineTooLong = false): string {
  const [status, code, message] =
    errCode === 'HPE_HEADER_OVERFLOW' && lineTooLong
      ? ['414 URI Too Long', 'uri_too_long', `the request URL is longer than ${MAX_URL_LENGTH} bytes.`]
      : errCode === 'HPE_HEADER_OVERFLOW'
      ? ['431 Request Header Fields Too Large', 'headers_too_large', 'the request headers are larger than 16 KiB.']
      : errCode === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['408 Request Timeout', 'request_timeout', `the request headers did not arrive within ${headerTimeoutSeconds} s.`]
        : ['400 Bad Request', 'bad_request', 'the request is not valid HTTP.'];
  const body = JSON.stringify(errorBody(code, message));
  return `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: ${JSON_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
