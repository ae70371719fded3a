import { endpoints } from '../endpoints/registry.js';
import type { EndpointDefinition, FieldType } from '../endpoints/types.js';

const schemaOfField: Record<FieldType, object> = {
  string: { type: 'string' },
  timestamp: { type: 'string', format: 'date-time' },
  integer: { type: 'integer' },
  number: { type: 'number' },
  object: { type: 'object' },
};

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

function operation(endpoint: EndpointDefinition, by: 'name' | 'id'): object {
  return {
    operationId: `${endpoint.name.replace(/[^A-Za-z0-9]+(.)/g, (_, c: string) => c.toUpperCase())}${by === 'id' ? 'ById' : ''}`,
    summary: endpoint.description,
    description:
      `${endpoint.description} At most ${endpoint.maxRows} rows. ` +
      (endpoint.cacheSeconds > 0
        ? `Cached for ${endpoint.cacheSeconds} s (X-Cache and Age headers; send Cache-Control: no-cache to refresh).`
        : 'Not cached.'),
    security: [{ apiKey: [] }],
    parameters: endpoint.params.map((p) => ({
      name: p.name,
      in: 'query',
      required: p.required,
      description: p.description,
      schema: {
        type: 'string',
        ...(p.allowed && p.otherValues === 'reject' ? { enum: [...p.allowed] } : {}),
        ...(p.allowed && p.otherValues !== 'reject' ? { examples: [...p.allowed] } : {}),
        ...(p.default !== undefined ? { default: p.default } : {}),
        ...(p.kind === 'timestamp' ? { format: 'date-time' } : {}),
      },
    })),
    responses: {
      '200': {
        description: 'The rows.',
        headers: endpoint.cacheSeconds > 0
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
                  maxItems: endpoint.maxRows,
                  items: {
                    type: 'object',
                    required: endpoint.fields.map((f) => f.name),
                    properties: Object.fromEntries(
                      endpoint.fields.map((f) => [f.name, { ...schemaOfField[f.type], description: f.description }]),
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

/** The OpenAPI 3.1 document of the HTTP mode, built from the same registry the library uses. */
export function openApiDocument(version: string): object {
  const paths: Record<string, object> = {
    '/health': { get: { operationId: 'health', summary: 'Liveness; needs no key.', responses: { '200': { description: 'Up.' } } } },
  };
  for (const endpoint of endpoints) {
    paths[`/api/endpoints/query/${endpoint.name}`] = { get: operation(endpoint, 'name') };
    paths[`/api/endpoints/query/${endpoint.id}`] = { get: operation(endpoint, 'id') };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'savedq', version, description: 'Saved, parameterised analytics queries over platform log data.' },
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
