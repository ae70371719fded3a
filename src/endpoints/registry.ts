import { NotFoundError } from '../errors.js';
import { closest } from '../suggest.js';
import type { EndpointDefinition, ParamDefinition } from './types.js';

const project: ParamDefinition = {
  name: 'project',
  kind: 'string',
  required: true,
  description: 'Project reference; only its entries are returned.',
};

const logsAll: EndpointDefinition = {
  name: 'logs.all',
  id: '0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01',
  description: "Recent edge log entries of one project, within its tier's retention window.",
  params: [
    project,
    {
      name: 'project_tier',
      kind: 'string',
      required: false,
      allowed: ['FREE', 'PRO', 'PAYG', 'ENTERPRISE'],
      otherValues: 'default',
      default: 'FREE',
      description: 'Retention window: FREE 1 day, PRO 7 days, PAYG and ENTERPRISE 90 days; any other value 1 day.',
    },
    {
      name: 'iso_timestamp_start',
      kind: 'timestamp',
      required: false,
      description: 'ISO 8601; only entries strictly after it.',
    },
    {
      name: 'iso_timestamp_end',
      kind: 'timestamp',
      required: false,
      description: 'ISO 8601; only entries at or before it.',
    },
  ],
  fields: [
    { name: 'id', type: 'string', description: 'Identifier (UUID) of the log entry.' },
    { name: 'timestamp', type: 'timestamp', description: 'Time of the entry, ISO 8601 UTC with microseconds.' },
    { name: 'event_message', type: 'string', description: 'Text message of the entry.' },
    { name: 'metadata', type: 'object', description: 'Nested structure attached to the entry.' },
  ],
  maxRows: 1000,
  cacheSeconds: 0,
  warmSeconds: 0,
};

const functionsInvocationStats: EndpointDefinition = {
  name: 'functions.invocation-stats',
  id: '5a9d3e71-2c84-4b6f-8e1d-7c0b9a4f2e12',
  description: 'Time-bucketed statistics of serverless function invocations of one project.',
  params: [
    { ...project, description: 'Project reference (metadata.project_ref) of the invocations.' },
    {
      name: 'function_id',
      kind: 'string',
      required: false,
      description: 'Only invocations of this function; absent or empty = all functions.',
    },
    {
      name: 'interval',
      kind: 'string',
      required: false,
      allowed: ['5min', '15min', '1hr', '1day', '7day'],
      otherValues: 'default',
      default: '1day',
      description:
        'Span and bucket: 5min by second, 15min and 1hr by minute, 1day by hour, 7day by day; any other value behaves as 1day.',
    },
  ],
  fields: [
    { name: 'timestamp', type: 'timestamp', description: 'Start of the bucket, ISO 8601 UTC.' },
    { name: 'min_execution_time', type: 'number', description: 'Minimum execution time (ms).' },
    { name: 'max_execution_time', type: 'number', description: 'Maximum execution time (ms).' },
    { name: 'avg_execution_time', type: 'number', description: 'Average execution time (ms).' },
    { name: 'p95_execution_time', type: 'number', description: 'Execution time (ms) at the 95th percentile rank.' },
    { name: 'p99_execution_time', type: 'number', description: 'Execution time (ms) at the 99th percentile rank.' },
    { name: 'count', type: 'integer', description: 'Invocations in the bucket.' },
    { name: 'error_count', type: 'integer', description: 'Invocations answered with status code >= 400.' },
  ],
  maxRows: 1000,
  cacheSeconds: 900,
  warmSeconds: 300,
};

const usageApiCounts: EndpointDefinition = {
  name: 'usage.api-counts',
  id: 'c3e8f1a0-6b2d-4d7e-a9f5-1e4b8c2d7a23',
  description: 'Time-bucketed counts of requests to a project, split by API area.',
  params: [
    {
      ...project,
      kind: 'regex',
      description: 'RE2 regular expression; a request counts when its URL contains a match.',
    },
    {
      name: 'interval',
      kind: 'string',
      required: true,
      allowed: ['minutely', 'hourly', 'daily'],
      otherValues: 'reject',
      description: 'minutely: last 60 minutes by minute; hourly: last hour by hour; daily: last 7 days by day.',
    },
  ],
  fields: [
    { name: 'timestamp', type: 'timestamp', description: 'Start of the bucket, ISO 8601 UTC.' },
    { name: 'total_rest_requests', type: 'integer', description: 'Requests whose path contains /rest.' },
    { name: 'total_storage_requests', type: 'integer', description: 'Requests whose path contains /storage.' },
    { name: 'total_auth_requests', type: 'integer', description: 'Requests whose path contains /auth.' },
    { name: 'total_realtime_requests', type: 'integer', description: 'Requests whose path contains /realtime.' },
  ],
  maxRows: 1000,
  cacheSeconds: 900,
  warmSeconds: 300,
};

/** The saved queries, in the order `list` shows them. */
export const endpoints: readonly EndpointDefinition[] = [logsAll, functionsInvocationStats, usageApiCounts];

/** The endpoint with this id, if any (cache entries name endpoints by id). */
export function endpointById(id: string): EndpointDefinition | undefined {
  return endpoints.find((e) => e.id === id);
}

/** Finds an endpoint by name or id; an unknown one is a NotFoundError that suggests the closest name. */
export function findEndpoint(nameOrId: string): EndpointDefinition {
  const key = nameOrId.trim();
  const found = endpoints.find((e) => e.name === key || e.id === key.toLowerCase());
  if (found) return found;
  const guess = closest(
    key,
    endpoints.map((e) => e.name),
  );
  const hint = guess ? ` Did you mean ${guess}?` : '';
  throw new NotFoundError(
    `unknown endpoint '${key}'.${hint} Endpoints: ${endpoints.map((e) => e.name).join(', ')}.`,
  );
}
