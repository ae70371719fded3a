import { EXPORT_FORMATS, EXPORT_FORMAT_NAMES, exportFormat, type Export, type ExportFormat } from '../calls/export.js';
import type { Caller } from '../access/index.js';
import { ForbiddenError, InputError } from '../errors.js';
import type { Savedq } from '../library.js';
import type { Log } from '../report.js';
import { drained } from '../drain.js';
import type { Metrics } from './metrics.js';
import { EXPORT_PREFIX } from './paths.js';
import { sunsetHeaders, VERSION_HEADER } from '../queries/version-ref.js';
import { decode, parseQueryString, postedCall, splitSql, versionHeaderOf, traceOf, type TakeCall } from './query-route.js';
import type { Answered, Route, RouteRequest } from './route.js';

/** The query string's name of the format, beside the query's parameters. */
const FORMAT_PARAM = 'format';

/** A format by the media type a caller accepts (`Accept`), when it names one of the export's. */
function acceptedFormat(accept: string | undefined): ExportFormat | undefined {
  if (accept === undefined) return undefined;
  const types = accept.split(',').map((part) => part.split(';')[0]?.trim().toLowerCase() ?? '');
  for (const type of types) {
    const format = EXPORT_FORMAT_NAMES.find((name) => EXPORT_FORMATS[name].mediaType.split(';')[0] === type);
    if (format) return format;
  }
  return undefined;
}

/**
 * `/api/endpoints/export/<name|id>` (CONTRACT §19): a saved query's whole answer, streamed (chunked) in
 * the format `format=` or `Accept` names (NDJSON when neither does), never cached. The same callers
 * as a query's (a token only when made with --export), at most --max-exports at once (one more: 503
 * with Retry-After). The caller going away stops the query; a failure after the first byte closes the
 * connection without the last chunk, so no client takes a short export for a whole one.
 */
export class ExportRoute implements Route {
  readonly methods = ['GET', 'POST'];
  readonly cors = { allowHeaders: `Content-Type, ${VERSION_HEADER}`, exposeHeaders: `Content-Disposition, ${VERSION_HEADER}, Deprecation, Sunset` };
  readonly credential = 'caller';
  constructor(
    private readonly lib: Savedq,
    private readonly takeCall: TakeCall,
    private readonly metrics: Metrics,
    private readonly log: Log,
  ) {}

  matches(path: string): boolean {
    return path.startsWith(EXPORT_PREFIX) && path.length > EXPORT_PREFIX.length && !path.slice(EXPORT_PREFIX.length).includes('/');
  }

  async answer({ req, res, ctx, path, search, gone }: RouteRequest): Promise<Answered> {
    const caller = ctx.caller as Caller;
    this.takeCall(res, caller);
    if (caller.kind === 'token' && caller.export !== true) throw new ForbiddenError('this token may not export (it was made without --export).');
    const asked = parseQueryString(search).filter(([name]) => name === FORMAT_PARAM);
    if (asked.length > 1) throw new InputError(`${FORMAT_PARAM} is given ${asked.length} times; give it once.`);
    const format = asked[0] ? exportFormat(asked[0][1]) : (acceptedFormat(req.headers.accept) ?? 'ndjson');
    // The query's parameters are the rest of the address (and a POST's body).
    const rest = search.split('&').filter((part) => decode(part.split('=')[0] ?? '') !== FORMAT_PARAM).join('&');
    const release = this.lib.exportSlot();
    try {
      const [params, sql] = splitSql(rest);
      const call = req.method === 'POST' ? await postedCall(req, rest) : { params, sql };
      const exported = await this.lib.export({ nameOrId: decode(path.slice(EXPORT_PREFIX.length)), ...call, caller, version: versionHeaderOf(req), versionInParams: true, format, signal: gone, requestId: ctx.id, trace: traceOf(req) });
      return await this.#send(res, ctx, exported, gone);
    } finally {
      release();
    }
  }

  /** Sends an export as it comes: chunked, each part as the response takes it. */
  async #send(res: RouteRequest['res'], ctx: RouteRequest['ctx'], exported: Export, gone: AbortSignal): Promise<Answered> {
    const name = exported.query.name;
    ctx.label = name;
    const { mediaType, extension } = EXPORT_FORMATS[exported.format];
    // The answer's length is not known: Node sends it chunked, and ends it with the last chunk only when whole.
    res.writeHead(200, {
      'Content-Type': mediaType,
      'Content-Disposition': `attachment; filename="${name.replace(/[^\w.-]/g, '_')}.${extension}"`,
      'Cache-Control': 'no-store',
      ...(res.hasHeader('X-Request-Id') ? {} : { 'X-Request-Id': ctx.id }),
      [VERSION_HEADER]: String(exported.query.version),
      ...Object.fromEntries(sunsetHeaders(exported.query)),
    });
    let outcome: 'whole' | 'failed' | 'stopped' = 'whole';
    try {
      for await (const bytes of exported.bytes) {
        if ((!res.write(bytes) && !(await drained(res))) || res.destroyed) {
          outcome = 'stopped';
          break;
        }
      }
      if (outcome === 'whole') res.end();
    } catch (err) {
      outcome = gone.aborted || res.destroyed ? 'stopped' : 'failed';
      if (outcome === 'failed') this.log.warn(`export of ${name} cut after ${exported.progress().bytes} bytes: ${err instanceof Error ? err.message : String(err)} id=${ctx.id}`);
      // No last chunk: the client sees the answer cut, never a short one as whole.
      res.destroy();
    }
    const { rows, bytes } = exported.progress();
    this.metrics.exported(name, exported.format, outcome, rows, bytes);
    return { what: name };
  }
}
