import { nodeCrypto } from '../lazy.js';
import type { Warehouse } from '../warehouse/index.js';
import { counted } from '../warehouse/lane.js';
import { makeTables, type TableName } from '../warehouse/schema.js';
import type { LoadReport } from './types.js';

/**
 * The sample projects: their serverless functions (fixed ids, so examples in the README work) with a
 * typical execution time each, their share of the traffic, the hour (UTC) their traffic peaks, and
 * their incidents, as minutes before the load and how long each lasted.
 */
export const SAMPLE_PROJECTS = [
  {
    ref: 'acme-shop',
    share: 0.4,
    peakHour: 15,
    functions: { 'checkout': { id: '7d1c2a9e-0b4f-4c3a-9e55-2f6a1d8b3c01', ms: 80 }, 'send-receipt': { id: '7d1c2a9e-0b4f-4c3a-9e55-2f6a1d8b3c02', ms: 140 } },
    incidents: [{ ago: 35, minutes: 6 }, { ago: 20 * 60, minutes: 25 }, { ago: 9 * 24 * 60, minutes: 40 }, { ago: 41 * 24 * 60, minutes: 90 }],
  },
  {
    ref: 'globex-api',
    share: 0.3,
    peakHour: 2,
    functions: { 'webhook': { id: '8e2d3b0f-1c5a-4d4b-8f66-3a7b2e9c4d01', ms: 45 }, 'resize-image': { id: '8e2d3b0f-1c5a-4d4b-8f66-3a7b2e9c4d02', ms: 650 } },
    incidents: [{ ago: 150, minutes: 15 }, { ago: 3 * 24 * 60, minutes: 45 }, { ago: 27 * 24 * 60, minutes: 60 }],
  },
  {
    ref: 'initech-crm',
    share: 0.1,
    peakHour: 9,
    functions: { 'nightly-report': { id: '9f3e4c1a-2d6b-4e5c-9a77-4b8c3fad5e01', ms: 2400 } },
    incidents: [{ ago: 6 * 24 * 60, minutes: 60 }],
  },
  {
    ref: 'umbrella-labs',
    share: 0.2,
    peakHour: 20,
    functions: { 'ingest': { id: 'a04f5d2b-3e7c-4f6d-8b88-5c9d4abe6f01', ms: 110 }, 'notify': { id: 'a04f5d2b-3e7c-4f6d-8b88-5c9d4abe6f02', ms: 30 } },
    incidents: [{ ago: 12, minutes: 4 }, { ago: 30 * 60, minutes: 20 }, { ago: 15 * 24 * 60, minutes: 30 }],
  },
] as const;

type SampleProject = (typeof SAMPLE_PROJECTS)[number];

/** The host every sample request was sent to ends with this: how the sample's rows are told from others. */
const SAMPLE_DOMAIN = '.savedq.dev';
const MINUTE_MS = 60_000;
const DAY_MS = 1_440 * MINUTE_MS;
const SPAN_MS = 90 * DAY_MS;
/** Traffic grows: most of it in the last weeks (an exponential of this mean age), the rest spread over the 90 days. */
const RECENT_MEAN_AGE_MS = 10 * DAY_MS;
const RECENT_SHARE = 0.75;
const EVENTS: Readonly<Record<TableName, number>> = { edge_logs: 60_000, function_edge_logs: 24_000 };
/**
 * Each project's first function also runs on a schedule, once a minute over the last hours (a queue
 * worker): so even a quiet project's last five minutes have calls, at any hour of the day.
 */
const SCHEDULED_MINUTES = 180;
/**
 * Each project's clients call its API every minute of the last hours, a few calls a minute by its
 * share and the hour: so a minutely series of any project has a value every minute, its incidents
 * a bump above it.
 */
const STEADY_EDGE_MINUTES = 180;
const STEADY_EDGE_PER_MINUTE = 8;
/** Extra requests a minute of an incident (clients retrying), of all the project's events: per table. */
const INCIDENT_EVENTS_PER_MINUTE: Readonly<Record<TableName, number>> = { edge_logs: 10, function_edge_logs: 3 };

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

/** How busy a project is at an instant, between 0.3 and 1.7 of its mean: a day's rhythm around its peak hour. */
function diurnal(ms: number, peakHour: number): number {
  const hour = (ms % DAY_MS) / 3_600_000;
  return 1 + 0.7 * Math.cos((2 * Math.PI * (hour - peakHour)) / 24);
}

/**
 * An instant in the 90 days before `nowMs`, at the steady, growing, daily-rhythmic rate of a project's
 * traffic, up to the moment of the load (an age drawn for the trend, kept in proportion to the hour's
 * business).
 */
function trafficInstant(nowMs: number, project: SampleProject): number {
  for (;;) {
    const age = Math.random() < RECENT_SHARE ? -RECENT_MEAN_AGE_MS * Math.log(1 - Math.random()) : Math.random() * SPAN_MS;
    if (age >= SPAN_MS) continue;
    const at = nowMs - age;
    if (Math.random() * 1.7 < diurnal(at, project.peakHour)) return at;
  }
}

function isoMicros(ms: number): string {
  const micros = BigInt(Math.floor(ms * 1000));
  return `${new Date(Number(micros / 1000n)).toISOString().slice(0, 19)}.${(micros % 1_000_000n).toString().padStart(6, '0')}Z`;
}

const TABLES_OF_REST = ['todos', 'orders', 'profiles', 'invoices', 'messages'];
const PATHS: ReadonlyArray<readonly [() => string, number]> = [
  [() => `/rest/v1/${pick(TABLES_OF_REST)}`, 45],
  [() => `/rest/v1/rpc/${pick(['search', 'stats', 'checkout_total'])}`, 5],
  [() => `/storage/v1/object/${pick(['avatars', 'public', 'exports'])}/${nodeCrypto().randomUUID().slice(0, 8)}.png`, 15],
  [() => `/auth/v1/${pick(['token', 'user', 'logout', 'signup'])}`, 20],
  [() => '/realtime/v1/websocket', 8],
  [() => `/graphql/v1`, 4],
  [() => `/storage/v1/object/auth/${nodeCrypto().randomUUID().slice(0, 8)}`, 3],
];
/** Status codes on a normal day: a few client errors, server errors rare. */
const STATUS: ReadonlyArray<readonly [number, number]> = [
  [200, 74], [201, 8], [204, 5], [304, 4], [400, 3], [401, 3], [404, 2.5], [500, 0.3], [503, 0.2],
];
/** Status codes of a function's calls on a normal day: a few refusals and failures. */
const FUNCTION_STATUS: ReadonlyArray<readonly [number, number]> = [[200, 94], [400, 2], [404, 1.5], [500, 1.5], [503, 1]];
/** Status codes during an incident: server errors in a burst. */
const INCIDENT_STATUS: ReadonlyArray<readonly [number, number]> = [[200, 45], [500, 30], [502, 10], [503, 12], [504, 3]];
const METHODS: ReadonlyArray<readonly [string, number]> = [['GET', 60], ['POST', 25], ['PATCH', 8], ['DELETE', 5], ['OPTIONS', 2]];
const AGENTS = ['supabase-js/2.45.0', 'Mozilla/5.0 (X11; Linux x86_64)', 'curl/8.5.0', 'okhttp/4.12.0', 'Deno/1.46'];

function edgeEvent(project: SampleProject, atMs: number, incident: boolean): object {
  const path = incident ? `/rest/v1/${pick(['orders', 'invoices'])}` : weighted(PATHS)();
  const method = weighted(METHODS);
  const status = weighted(incident ? INCIDENT_STATUS : STATUS);
  const url = `https://${project.ref}${SAMPLE_DOMAIN}${path}${method === 'GET' && Math.random() < 0.4 ? '?select=*' : ''}`;
  const ip = `203.0.113.${Math.floor(Math.random() * 254) + 1}`;
  return {
    timestamp: isoMicros(atMs),
    project: project.ref,
    event_message: `${method} | ${status} | ${ip} | ${url}`,
    metadata: {
      request: { method, url, path, host: `${project.ref}${SAMPLE_DOMAIN}`, headers: { user_agent: pick(AGENTS) } },
      response: { status_code: status },
    },
  };
}

function functionEvent(project: SampleProject, atMs: number, incident: boolean, scheduled = false): object {
  const functions = Object.entries(project.functions as Record<string, { id: string; ms: number }>);
  // An incident hits the project's first function (errors, and calls that take several times as long);
  // the scheduled runs are the first function's too.
  const [name, { id, ms }] = incident || scheduled ? (functions[0] as (typeof functions)[number]) : pick(functions);
  const status = weighted(incident ? INCIDENT_STATUS : FUNCTION_STATUS);
  // Log-normal execution times around the function's own: most calls quick, a tail of slow ones.
  const executionTime = Math.round(ms * (incident ? 4 : 1) * Math.exp(0.55 * gaussian()) * 100) / 100;
  const url = `https://${project.ref}${SAMPLE_DOMAIN}/functions/v1/${name}`;
  return {
    timestamp: isoMicros(atMs),
    event_message: `POST | ${status} | ${url}`,
    metadata: {
      project_ref: project.ref,
      function_id: id,
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

/** The instants of a project's steady calls of the last hours: a few in every minute (the current one's so far), more at its busy hours. */
function steadyMinutes(project: SampleProject, nowMs: number): number[] {
  const thisMinute = Math.floor(nowMs / MINUTE_MS) * MINUTE_MS;
  return Array.from({ length: STEADY_EDGE_MINUTES }, (_, minute) => {
    const start = thisMinute - minute * MINUTE_MS;
    const calls = Math.max(2, Math.round(STEADY_EDGE_PER_MINUTE * project.share * diurnal(start, project.peakHour)));
    return Array.from({ length: calls }, () => start + Math.random() * Math.min(MINUTE_MS, nowMs - start));
  }).flat();
}

/** How many sample events `sampleLines` yields for a table. */
export function sampleSize(table: TableName): number {
  return EVENTS[table];
}

/** How many of a table's sample events a project has, of which how many fall in its incidents. */
function projectCounts(table: TableName, project: SampleProject, index: number): { events: number; incidentEvents: number } {
  // The last project takes what rounding left, so the table's total is exact.
  const before = SAMPLE_PROJECTS.slice(0, index).reduce((sum, p) => sum + Math.round(EVENTS[table] * p.share), 0);
  const events = index === SAMPLE_PROJECTS.length - 1 ? EVENTS[table] - before : Math.round(EVENTS[table] * project.share);
  const incidentEvents = project.incidents.reduce((sum, i) => sum + i.minutes * INCIDENT_EVENTS_PER_MINUTE[table], 0);
  return { events, incidentEvents };
}

/**
 * Realistic sample events for a table, as NDJSON lines, over the 90 days before `nowMs`: each project's
 * traffic at a steady rate with a daily rhythm, growing over the weeks, up to the moment of the load;
 * and its incidents, bursts of server errors (and slow function calls) among retried requests.
 */
export function* sampleLines(table: TableName, nowMs: number): Generator<string> {
  const event = table === 'edge_logs' ? edgeEvent : functionEvent;
  for (const [index, project] of SAMPLE_PROJECTS.entries()) {
    const { events, incidentEvents } = projectCounts(table, project, index);
    const scheduled = table === 'function_edge_logs' ? SCHEDULED_MINUTES : 0;
    const steady = table === 'edge_logs' ? steadyMinutes(project, nowMs) : [];
    for (let i = 0; i < events - incidentEvents - scheduled - steady.length; i++) yield JSON.stringify(event(project, trafficInstant(nowMs, project), false));
    // One call in each minute of the clock (the one under way too), as a cron worker's: not one a minute counted back from now, which left a minute in ten without any.
    const thisMinute = Math.floor(nowMs / MINUTE_MS) * MINUTE_MS;
    for (let minute = 0; minute < scheduled; minute++) {
      const start = thisMinute - minute * MINUTE_MS;
      yield JSON.stringify(event(project, start + Math.random() * Math.min(MINUTE_MS, nowMs - start), false, true));
    }
    for (const at of steady) yield JSON.stringify(event(project, at, false));
    for (const incident of project.incidents) {
      const start = nowMs - incident.ago * MINUTE_MS;
      for (let i = 0; i < incident.minutes * INCIDENT_EVENTS_PER_MINUTE[table]; i++) {
        yield JSON.stringify(event(project, start + Math.random() * incident.minutes * MINUTE_MS, true));
      }
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

/** The sample's rows of a table: the sample projects' events of requests to the sample's hosts. */
const SAMPLE_ROWS = `project IN {projects:Array(String)} AND position(event_message, '${SAMPLE_DOMAIN}/') > 0`;
const sampleParams = () => ({ projects: SAMPLE_PROJECTS.map((p) => p.ref) });

/** How many of the sample's rows a table holds (0: no sample loaded). */
export async function sampleRowsIn(warehouse: Warehouse, table: TableName): Promise<number> {
  const [row] = await warehouse.query(`SELECT count() AS n FROM ${table} WHERE ${SAMPLE_ROWS}`, sampleParams());
  return Number(row?.n ?? 0);
}

/** The table a log table's sample is loaded into, beside it, before the two are swapped. */
const besideOf = (table: TableName) => `savedq_sample_${table}`;

/**
 * Loads the sample into tables beside the log tables (each made AS its log table, holding its rows
 * other than the sample's: events of the user's own), then swaps each with its log table, one after the
 * other with nothing between (EXCHANGE TABLES, a change of the engine's metadata: a millisecond), and
 * drops what was swapped out. Until the swap nothing a query reads has changed: an interrupted load
 * (`signal`), or a failed one, leaves every log table as it was; the interrupt waits for the statement
 * under way (cli/signals.ts), and the swap is never cut by one.
 */
export async function loadBeside(
  warehouse: Warehouse,
  tables: readonly TableName[],
  load: (table: TableName, into: string) => Promise<LoadReport>,
  signal: AbortSignal | undefined,
): Promise<LoadReport[]> {
  const drop = () => Promise.all(tables.map((table) => warehouse.command(`DROP TABLE IF EXISTS ${besideOf(table)} SYNC`).catch(() => undefined)));
  try {
    await makeTables(warehouse);
    for (const table of tables) {
      // Left by a load killed before: its sample was never swapped in.
      await warehouse.command(`DROP TABLE IF EXISTS ${besideOf(table)} SYNC`);
      await warehouse.command(`CREATE TABLE ${besideOf(table)} AS ${table}`);
      await warehouse.command(`INSERT INTO ${besideOf(table)} SELECT * FROM ${table} WHERE NOT (${SAMPLE_ROWS})`, sampleParams());
    }
    const reports: LoadReport[] = [];
    for (const table of tables) {
      signal?.throwIfAborted();
      reports.push(await load(table, besideOf(table)));
    }
    signal?.throwIfAborted();
    await counted(async () => {
      const swapped: TableName[] = [];
      try {
        for (const table of tables) {
          await warehouse.command(`EXCHANGE TABLES ${table} AND ${besideOf(table)}`);
          swapped.push(table);
        }
      } catch (err) {
        // All or none: the ones swapped go back.
        for (const table of swapped) await warehouse.command(`EXCHANGE TABLES ${table} AND ${besideOf(table)}`).catch(() => undefined);
        throw err;
      }
    });
    return reports;
  } finally {
    await drop();
  }
}

/** Deletes the sample's rows of a table (`load --sample --replace`), the user's own rows left as they are. */
export async function deleteSample(warehouse: Warehouse, table: TableName): Promise<void> {
  await warehouse.command(`DELETE FROM ${table} WHERE ${SAMPLE_ROWS}`, sampleParams());
}
