import { splitList } from '../queries/param-types.js';
import type { FieldType, ParamDefinition, SavedQuery } from '../queries/types.js';

/** The JSON Schema of each kind of result field. */
const schemaOfField: Record<FieldType, object> = {
  string: { type: 'string' },
  integer: { type: 'integer' },
  number: { type: 'number' },
  boolean: { type: 'boolean' },
  timestamp: { type: 'string', format: 'date-time' },
  date: { type: 'string', format: 'date' },
  object: { type: 'object' },
  array: { type: 'array' },
};

/** A parameter's value in the schema's own terms: a number for a number, a list for a list. */
function typedValue(param: ParamDefinition, text: string): unknown {
  switch (param.type) {
    case 'integer':
    case 'number':
      return Number(text);
    case 'boolean':
      return text === 'true';
    case 'string[]':
      return splitList(text);
    default:
      return text;
  }
}

/** The JSON Schema of a parameter's value, as its type, bounds, allowed values and default say. */
function paramSchema(p: ParamDefinition): object {
  const enumOf = (values: readonly string[]) =>
    p.other === 'reject' ? { enum: values.map((v) => typedValue({ ...p, type: p.type === 'string[]' ? 'string' : p.type }, v)) } : { examples: [...values] };
  const base: Record<string, unknown> = (() => {
    switch (p.type) {
      case 'integer':
        return { type: 'integer', format: 'int64' };
      case 'number':
        return { type: 'number', format: 'double' };
      case 'boolean':
        return { type: 'boolean' };
      case 'timestamp':
        return { type: 'string', format: 'date-time' };
      case 'date':
        return { type: 'string', format: 'date' };
      case 'string[]':
        return { type: 'array', items: { type: 'string', ...(p.allowed ? enumOf(p.allowed) : {}) } };
      default:
        return { type: 'string' };
    }
  })();
  return {
    ...base,
    ...(p.allowed && p.type !== 'string[]' ? enumOf(p.allowed) : {}),
    ...(p.min !== undefined ? { minimum: p.min } : {}),
    ...(p.max !== undefined ? { maximum: p.max } : {}),
    ...(p.default !== undefined ? { default: typedValue(p, p.default) } : {}),
  };
}

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

function operation(query: SavedQuery, by: 'name' | 'id'): object {
  return {
    operationId: `${query.name.replace(/[^A-Za-z0-9]+(.)/g, (_, c: string) => c.toUpperCase())}${by === 'id' ? 'ById' : ''}`,
    summary: query.description || query.name,
    description:
      `${query.description ? `${query.description} ` : ''}At most ${query.maxRows} rows. ` +
      (query.cacheSeconds > 0
        ? `Cached for ${query.cacheSeconds} s (X-Cache and Age headers; send Cache-Control: no-cache to refresh).`
        : 'Not cached.'),
    security: [{ apiKey: [] }],
    parameters: query.params.map((p) => ({
      name: p.name,
      in: 'query',
      required: p.required,
      ...(p.description ? { description: p.description } : {}),
      // A list is one comma-separated value: ?tags=a,b.
      ...(p.type === 'string[]' ? { style: 'form', explode: false } : {}),
      schema: paramSchema(p),
    })),
    responses: {
      '200': {
        description: 'The rows.',
        headers: query.cacheSeconds > 0
          ? {
              'X-Cache': { schema: { type: 'string', enum: ['HIT', 'MISS'] } },
              Age: { schema: { type: 'integer' }, description: 'Seconds since the result was computed.' },
            }
          : {},
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['result'],
              properties: {
                result: {
                  type: 'array',
                  maxItems: query.maxRows,
                  items: {
                    type: 'object',
                    ...(query.fields.length > 0 ? { required: query.fields.map((f) => f.name) } : {}),
                    properties: Object.fromEntries(
                      query.fields.map((f) => [f.name, { ...schemaOfField[f.type], ...(f.description ? { description: f.description } : {}) }]),
                    ),
                  },
                },
              },
            },
          },
        },
      },
      '400': errorResponse('A parameter is missing, unknown or malformed.'),
      '401': errorResponse('Missing or wrong X-API-KEY.'),
      '502': errorResponse('The warehouse failed.'),
      '504': errorResponse('The query ran past its time limit.'),
    },
  };
}

/** The OpenAPI 3.1 document of the HTTP mode: every saved query the server answers, by name and by id. */
export function openApiDocument(version: string, queries: readonly SavedQuery[]): object {
  const paths: Record<string, object> = {
    '/health': {
      get: {
        operationId: 'health',
        summary: 'Liveness; needs no key.',
        security: [],
        responses: { '200': { description: 'Up.' }, '405': errorResponse('Any method but GET and HEAD.') },
      },
    },
  };
  for (const query of queries) {
    paths[`/api/endpoints/query/${query.name}`] = { get: operation(query, 'name') };
    paths[`/api/endpoints/query/${query.id}`] = { get: operation(query, 'id') };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'savedq',
      version,
      description: 'Saved, parameterised analytics queries over platform log data.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    // Relative: the paths are the server's that serves this document, whatever name it is reached by.
    servers: [{ url: '/' }],
    paths,
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' } },
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
