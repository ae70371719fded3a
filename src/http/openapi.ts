import { answerFacts, parameterSchema, sqlSchema, versionedRowsSchema } from '../queries/json-schema.js';
import type { CatalogScan } from '../queries/catalog.js';
import { SQL_PARAM } from '../queries/sql.js';
import type { SavedQuery } from '../queries/types.js';
import type { ShapeOf } from '../queries/shape.js';
import { grantOf, type Caller, type Grant } from '../access/index.js';
import { MAX_URL_LENGTH } from './answers.js';
import { VERSION_HEADER } from '../queries/version-ref.js';
import { EXPORT_FORMAT_NAMES, EXPORT_FORMATS } from '../calls/export.js';

const errorResponse = (description: string, headers: object = {}) => ({
  description,
  headers,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

const retryAfter = { 'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' } } };

/** On every answer to a rate-limited caller. */
const rateLimitHeaders = {
  'RateLimit-Limit': { description: 'Calls the caller may make in a burst.', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Calls left in the burst now.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the burst is whole again.', schema: { type: 'integer' } },
};

/** The answers any path may get besides its own: the server's limits and failures, in the error envelope. */
const commonErrors = {
  '408': errorResponse('The request headers did not arrive within --header-timeout.'),
  '414': errorResponse(`The request URL is longer than ${MAX_URL_LENGTH} bytes (a request line of any length past it).`),
  '431': errorResponse('The request headers are larger than 16 KiB.'),
  '500': errorResponse('This saved query cannot run (its definition; the server log says why), or an internal error.'),
};

/** An operation for HEAD beside a GET: the same answers, without their bodies. */
function headOf(get: Record<string, unknown>): object {
  return { ...get, operationId: `${String(get.operationId)}Head`, summary: `${String(get.summary)} (headers only)` };
}

/**
 * How a caller pins a version (docs/queries.md, "Versions"): `?version=` (unless the query has a
 * parameter of that name) or the Savedq-Version header, with the versions there are as the enum.
 */
function versionParameters(query: SavedQuery, versions: readonly number[]): object[] {
  const schema = { type: 'integer', enum: [...versions] };
  const header = { name: VERSION_HEADER, in: 'header', required: false, description: `The version of ${query.name} to run (default: the current one, ${query.version}).`, schema };
  if (query.params.some((p) => p.name === 'version')) return [header];
  return [{ name: 'version', in: 'query', required: false, description: `The version of ${query.name} to run (default: the current one, ${query.version}); the ${VERSION_HEADER} header says it too.`, schema }, header];
}

function operation(query: SavedQuery, by: 'name' | 'id', grant: Grant, versions: readonly number[], rows: object): Record<string, unknown> {
  const { fixed } = grant;
  const sql = query.sandbox && grant.sql;
  return {
    operationId: `${query.name.replace(/[^A-Za-z0-9]+(.)/g, (_, c: string) => c.toUpperCase())}${by === 'id' ? 'ById' : ''}`,
    tags: ['saved queries'],
    summary: query.description || query.name,
    description:
      `${query.description ? `${query.description} ` : ''}At most ${query.maxRows} rows. ` +
      (query.cacheSeconds > 0
        ? `Cached for ${query.cacheSeconds} s (X-Cache and Age headers; send Cache-Control: no-cache to refresh).`
        : 'Not cached.') +
      (sql ? ' Sandboxed: `sql` is your own SELECT over the answer, which it reads as the table `result`.' : ''),
    // The saved query itself, for clients that know savedq (the page): not to be read off the operationId.
    'x-savedq-query': { name: query.name, id: query.id, sandbox: query.sandbox },
    // An API key or a signed token, in X-API-KEY or as a bearer credential.
    security: [{ apiKey: [] }, { bearer: [] }],
    parameters: [
      ...query.params.map((p) => ({
        name: p.name,
        in: 'query',
        required: p.required,
        // savedq's own type, which the schema (text in a query string) cannot always say.
        'x-savedq-type': p.type,
        // The value the caller's token fixes: every call is made with it.
        ...(fixed.has(p.name) ? { 'x-savedq-fixed': fixed.get(p.name) } : {}),
        ...(p.description ? { description: p.description } : {}),
        // A list is one comma-separated value: ?tags=a,b.
        ...(p.type === 'string[]' ? { style: 'form', explode: false } : {}),
        schema: parameterSchema(p, 'query-string'),
      })),
      ...(sql ? [{ name: SQL_PARAM, in: 'query', required: false, description: 'Your own SELECT over the answer (table `result`); past 8 KiB of address, POST it.', schema: sqlSchema(query, MAX_URL_LENGTH) }] : []),
      ...versionParameters(query, versions),
    ],
    responses: {
      '200': {
        description: 'The rows.',
        headers: {
          ...(query.cacheSeconds > 0
            ? {
                'X-Cache': { schema: { type: 'string', enum: ['HIT', 'MISS', 'BYPASS', 'STALE'], description: "HIT: from the cache; MISS: computed now; BYPASS: the store cannot be reached, computed now and not kept; STALE: no host of the warehouse answered, an expired answer from the cache within the query's stale_if_error." } },
                Age: { schema: { type: 'integer' }, description: 'Seconds since the result was computed.' },
              }
            : {}),
          'X-Request-Id': { schema: { type: 'string' }, description: "The caller's own X-Request-Id when it is 1-128 of [A-Za-z0-9._-], else a fresh one." },
          [VERSION_HEADER]: { schema: { type: 'integer', enum: [...versions] }, description: 'The version of the saved query that made the rows.' },
          ...(versions.length > 1
            ? {
                Deprecation: { schema: { type: 'string' }, description: 'On an older version that has a sunset: since when it is deprecated (RFC 9745), as @<seconds since the epoch>.' },
                Sunset: { schema: { type: 'string' }, description: 'On an older version that has a sunset: when it stops answering (RFC 8594); past it, 410.' },
              }
            : {}),
          ...rateLimitHeaders,
        },
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['result', 'version', 'truncated', 'cached', 'age_seconds', 'statistics'],
              properties: {
                result: rows,
                ...answerFacts(query.maxRows, versions),
              },
            },
          },
        },
      },
      '400': errorResponse(sql ? 'A parameter is missing, unknown or malformed; or the SQL is refused (sandbox_refused, naming what) or fails in the engine (bad_sql).' : 'A parameter is missing, unknown or malformed; or SQL was sent (sandbox_disabled: this query takes none).'),
      '401': errorResponse('No credential (an Authorization of a scheme other than Bearer is none), one with whitespace inside, an unknown key, or a token that does not verify (the message says why: "token expired.").', {
        'WWW-Authenticate': { description: 'Bearer', schema: { type: 'string' } },
      }),
      '403': errorResponse('A token asking for a query outside its scopes, giving a fixed parameter another value (named), or sending SQL without --sql.'),
      '429': errorResponse("The caller is past its rate limit (a token's limits.rps, or --rate-limit).", { ...retryAfter, ...rateLimitHeaders }),
      '404': errorResponse('No such saved query (any more: the server read its folders again), or no such version of it (the message lists those there are).'),
      ...(versions.length > 1 ? { '410': errorResponse('The version asked is past its sunset; the message names the current version.') } : {}),
      ...commonErrors,
      '502': errorResponse('The warehouse failed.'),
      '503': errorResponse('The engine is busy: another process holds the data directory, or more calls wait than --max-queue.', retryAfter),
      '504': errorResponse('The query ran past its time limit.'),
    },
  };
}

/** POST to a query: the GET's call with its parameters (and SQL) in a JSON body, answered as GET answers it. */
function postOf(query: SavedQuery, get: Record<string, unknown>, grant: Grant): object {
  const params = query.params.filter((p) => !grant.fixed.has(p.name));
  const sql = query.sandbox && grant.sql;
  return {
    ...get,
    operationId: `${String(get.operationId)}Post`,
    summary: `${String(get.summary)} (parameters in a JSON body)`,
    parameters: [],
    requestBody: {
      // A query with a required parameter needs a body, and in it its params (else 400, naming what is missing).
      required: params.some((p) => p.required),
      content: {
        'application/json': {
          schema: {
            type: 'object',
            additionalProperties: false,
            ...(params.some((p) => p.required) ? { required: ['params'] } : {}),
            properties: {
              params: {
                type: 'object',
                additionalProperties: false,
                properties: {
                  ...Object.fromEntries(params.map((p) => [p.name, parameterSchema(p, 'json')])),
                  // A parameter the caller's token fixes may be given, as the value it is fixed to.
                  ...Object.fromEntries(query.params.filter((p) => grant.fixed.has(p.name)).map((p) => [p.name, { const: grant.fixed.get(p.name) }])),
                },
                ...(params.some((p) => p.required) ? { required: params.filter((p) => p.required).map((p) => p.name) } : {}),
              },
              ...(sql ? { [SQL_PARAM]: sqlSchema(query) } : {}),
            },
          },
        },
      },
    },
    responses: {
      ...(get.responses as object),
      '413': errorResponse('The body is larger than 1 MiB.'),
      '415': errorResponse('The body is not JSON (Content-Type: application/json).'),
    },
  };
}

/** The media types of an export (calls/export.ts), each a stream of bytes the next tool reads. */
const EXPORT_CONTENT: Record<string, object> = Object.fromEntries(
  EXPORT_FORMAT_NAMES.map((name): [string, object] => {
    const { mediaType, binary } = EXPORT_FORMATS[name];
    return [mediaType.split(';')[0] ?? mediaType, { schema: binary ? { type: 'string', contentMediaType: mediaType, contentEncoding: 'binary' } : { type: 'string' } }];
  }),
);

/**
 * GET and POST of a query's export (CONTRACT §19): its call as the query's (the same parameters, the
 * same body), its whole answer past the row cap, streamed in the format `format` or Accept names.
 */
function exportOf(query: SavedQuery, get: Record<string, unknown>, post: Record<string, unknown>): object {
  const format = { name: 'format', in: 'query', required: false, description: 'ndjson (default), csv, parquet or arrow (an Arrow IPC stream); else the first of Accept\'s media types savedq writes.', schema: { type: 'string', enum: EXPORT_FORMAT_NAMES } };
  const responses = {
    ...(get.responses as Record<string, unknown>),
    '200': {
      description: 'The whole answer, past the row cap (the query\'s own LIMIT still holds), streamed (chunked). A failure after the first byte closes the connection without the last chunk: an answer whose transfer did not end is not whole.',
      headers: {
        'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; filename="<query>.<ndjson|csv|parquet|arrows>"' },
        'X-Request-Id': { schema: { type: 'string' } },
      },
      content: EXPORT_CONTENT,
    },
    '403': errorResponse('A token made without --export, or asking for a query outside its scopes, or giving a fixed parameter another value.'),
    '503': errorResponse('More exports are under way than --max-exports lets run at once, or the engine is busy.', retryAfter),
  };
  const id = String(get.operationId);
  const exported = { ...get, operationId: `${id}Export`, tags: ['exports'], summary: `${String(get.summary)}: the whole answer, exported`, description: `${query.name}'s whole answer, past its row cap of ${query.maxRows}, streamed; never cached.`, responses };
  return {
    get: { ...exported, parameters: [...(get.parameters as unknown[]), format] },
    post: { ...post, operationId: `${id}ExportPost`, tags: ['exports'], summary: `${exported.summary} (parameters in a JSON body)`, parameters: [format], responses: { ...responses, ...pick(post.responses as Record<string, unknown>, ['413', '415']) } },
  };
}

function pick(object: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in object).map((k) => [k, object[k]]));
}

/** GET /health: up, and on the embedded engine its queue. */
const health = {
  operationId: 'health',
  tags: ['server'],
  summary: 'Liveness; needs no key.',
  description: 'Answers while the server runs; on the embedded engine, also the engine\'s queue: statements running, waiting their turn, and dropped because everyone waiting for them had gone.',
  security: [],
  responses: {
    '200': {
      description: 'Up.',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['status'],
            properties: {
              status: { type: 'string', enum: ['ok'] },
              queue: {
                type: 'object',
                description: "The embedded engine's statements: running, waiting their turn, and dropped (never run: everyone waiting had gone).",
                required: ['running', 'waiting', 'dropped'],
                properties: { running: { type: 'integer' }, waiting: { type: 'integer' }, dropped: { type: 'integer' } },
              },
            },
          },
        },
      },
    },
    ...commonErrors,
  },
};

/**
 * The OpenAPI 3.1 document of the HTTP mode: every saved query the server answers, by name and by id;
 * for a caller (the document asked for with a credential), the queries it may call, its fixed
 * parameters marked, and who it is (`x-savedq-caller`), so that a client needs not read a token.
 */
export function openApiDocument(version: string, scan: Pick<CatalogScan, 'queries' | 'kept' | 'versions'>, caller?: Caller, shapeOf?: ShapeOf): object {
  const { queries, versions } = scan;
  const paths: Record<string, object> = {
    '/health': {
      get: health,
      head: headOf(health),
    },
  };
  for (const query of queries) {
    const grant = grantOf(caller, query);
    if (!grant) continue;
    for (const by of ['name', 'id'] as const) {
      const get = operation(query, by, grant, versions.get(query.name) ?? [query.version], versionedRowsSchema(query, scan.kept.filter((k) => k.name === query.name), shapeOf));
      const post = postOf(query, get, grant) as Record<string, unknown>;
      paths[`/api/endpoints/query/${by === 'name' ? query.name : query.id}`] = { get, head: headOf(get), post };
      if (caller?.kind !== 'token' || caller.export === true) paths[`/api/endpoints/export/${by === 'name' ? query.name : query.id}`] = exportOf(query, get, post);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'savedq',
      version,
      description: 'Saved, parameterised analytics queries over platform log data.',
      license: { name: 'MIT', identifier: 'MIT' },
      // The server's operator is who to ask: savedq cannot know them, so it says where to look.
      contact: { name: 'The operator of this server (savedq serve)' },
    },
    tags: [
      { name: 'saved queries', description: 'Each saved query this server answers, at its name and at its id.' },
      { name: 'exports', description: "Each saved query's whole answer, past its row cap, streamed as NDJSON, CSV, Parquet or Arrow (an API key, or a token made with --export)." },
      { name: 'server', description: "The server's own state." },
    ],
    ...(caller ? { 'x-savedq-caller': { kind: caller.kind, name: caller.name } } : {}),
    // Relative: the paths are the server's that serves this document, whatever name it is reached by.
    servers: [{ url: '/' }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY', description: 'An API key (every query), or a signed token in this header.' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A signed token (HS256) that opens some queries with fixed parameters, or an API key.' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: { code: { type: 'string' }, message: { type: 'string' } },
            },
          },
        },
      },
    },
  };
}
