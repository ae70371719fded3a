import { randomUUID } from 'node:crypto';
import type { TableName } from '../warehouse/schema.js';

/** The sample projects and their serverless functions (fixed ids, so examples in the README work). */
export const SAMPLE_PROJECTS = [
  { ref: 'acme-shop', functions: { 'checkout': '7d1c2a9e-0b4f-4c3a-9e55-2f6a1d8b3c01', 'send-receipt': '7d1c2a9e-0b4f-4c3a-9e55-2f6a1d8b3c02' } },
  { ref: 'globex-api', functions: { 'webhook': '8e2d3b0f-1c5a-4d4b-8f66-3a7b2e9c4d01', 'resize-image': '8e2d3b0f-1c5a-4d4b-8f66-3a7b2e9c4d02' } },
  { ref: 'initech-crm', functions: { 'nightly-report': '9f3e4c1a-2d6b-4e5c-9a77-4b8c3fad5e01' } },
  { ref: 'umbrella-labs', functions: { 'ingest': 'a04f5d2b-3e7c-4f6d-8b88-5c9d4abe6f01', 'notify': 'a04f5d2b-3e7c-4f6d-8b88-5c9d4abe6f02' } },
] as const;

const DAY_MS = 86_400_000;
const SPAN_MS = 90 * DAY_MS;
const EDGE_EVENTS_PER_PROJECT = 15_000;
const FUNCTION_EVENTS_PER_PROJECT = 6_000;

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)] as T;
}

/** Weighted choice: [value, weight] pairs. */
function weighted<T>(choices: ReadonlyArray<readonly [T, number]>): T {
  const total = choices.reduce((sum, [, w]) => sum + w, 0);
  let r = Math.random() * total;
  for (const [value, w] of choices) {
    r -= w;
    if (r < 0) return value;
  }
  return (choices[choices.length - 1] as readonly [T, number])[0];
}

/**
 * An instant in the last 90 days, denser towards now (the cube of a uniform number), so that every
 * interval, from the last 5 minutes to the last 90 days, has entries.
 */
function recentInstant(nowMs: number): string {
  const ageMs = SPAN_MS * Math.random() ** 3;
  const micros = BigInt(Math.floor((nowMs - ageMs) * 1000));
  return `${new Date(Number(micros / 1000n)).toISOString().slice(0, 19)}.${(micros % 1_000_000n).toString().padStart(6, '0')}Z`;
}

const TABLES_OF_REST = ['todos', 'orders', 'profiles', 'invoices', 'messages'];
const PATHS: ReadonlyArray<readonly [() => string, number]> = [
  [() => `/rest/v1/${pick(TABLES_OF_REST)}`, 45],
  [() => `/rest/v1/rpc/${pick(['search', 'stats', 'checkout_total'])}`, 5],
  [() => `/storage/v1/object/${pick(['avatars', 'public', 'exports'])}/${randomUUID().slice(0, 8)}.png`, 15],
  [() => `/auth/v1/${pick(['token', 'user', 'logout', 'signup'])}`, 20],
  [() => '/realtime/v1/websocket', 8],
  [() => `/graphql/v1`, 4],
  [() => `/storage/v1/object/auth/${randomUUID().slice(0, 8)}`, 3],
];
const STATUS: ReadonlyArray<readonly [number, number]> = [
  [200, 70], [201, 8], [204, 5], [304, 4], [400, 4], [401, 4], [404, 3], [500, 1.5], [503, 0.5],
];
const METHODS: ReadonlyArray<readonly [string, number]> = [['GET', 60], ['POST', 25], ['PATCH', 8], ['DELETE', 5], ['OPTIONS', 2]];
const AGENTS = ['supabase-js/2.45.0', 'Mozilla/5.0 (X11; Linux x86_64)', 'curl/8.5.0', 'okhttp/4.12.0', 'Deno/1.46'];

function edgeEvent(project: string, nowMs: number): object {
  const path = weighted(PATHS)();
  const method = weighted(METHODS);
  const status = weighted(STATUS);
  const url = `https://${project}.savedq.dev${path}${method === 'GET' && Math.random() < 0.4 ? '?select=*' : ''}`;
  const ip = `203.0.113.${Math.floor(Math.random() * 254) + 1}`;
  return {
    timestamp: recentInstant(nowMs),
    project,
    event_message: `${method} | ${status} | ${ip} | ${url}`,
    metadata: {
      request: { method, url, path, host: `${project}.savedq.dev`, headers: { user_agent: pick(AGENTS) } },
      response: { status_code: status },
    },
  };
}

function functionEvent(project: string, functions: Readonly<Record<string, string>>, nowMs: number): object {
  const [name, functionId] = pick(Object.entries(functions));
  const status = weighted(STATUS.filter(([s]) => s !== 304));
  // Log-normal execution times: most calls quick, a long tail of slow ones.
  const executionTime = Math.round(Math.exp(4 + 1.1 * gaussian()) * 100) / 100;
  const url = `https://${project}.savedq.dev/functions/v1/${name}`;
  return {
    timestamp: recentInstant(nowMs),
    event_message: `POST | ${status} | ${url}`,
    metadata: {
      project_ref: project,
      function_id: functionId,
      execution_time_ms: executionTime,
      version: String(1 + Math.floor(Math.random() * 5)),
      request: { method: 'POST', url, path: `/functions/v1/${name}` },
      response: { status_code: status },
    },
  };
}

function gaussian(): number {
  return Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random());
}

/** How many sample events `sampleLines` yields for a table. */
export function sampleSize(table: TableName): number {
  return SAMPLE_PROJECTS.length * (table === 'edge_logs' ? EDGE_EVENTS_PER_PROJECT : FUNCTION_EVENTS_PER_PROJECT);
}

/** Realistic sample events for each table, as NDJSON lines, spread over the 90 days before `nowMs`. */
export function* sampleLines(table: TableName, nowMs: number): Generator<string> {
  for (const { ref, functions } of SAMPLE_PROJECTS) {
    if (table === 'edge_logs') {
      for (let i = 0; i < EDGE_EVENTS_PER_PROJECT; i++) yield JSON.stringify(edgeEvent(ref, nowMs));
    } else {
      for (let i = 0; i < FUNCTION_EVENTS_PER_PROJECT; i++) yield JSON.stringify(functionEvent(ref, functions, nowMs));
    }
  }
}

/** Sample events of a table as NDJSON pieces of about a megabyte, so the batching sees few, large pieces. */
export function* sampleChunks(table: TableName, nowMs: number): Generator<string> {
  let chunk: string[] = [];
  let size = 0;
  for (const line of sampleLines(table, nowMs)) {
    chunk.push(line);
    size += line.length + 1;
    if (size >= 1 << 20) {
      yield `${chunk.join('\n')}\n`;
      chunk = [];
      size = 0;
    }
  }
  if (chunk.length > 0) yield `${chunk.join('\n')}\n`;
}
