import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AT, atOffset, cli, HOUR, LONG_TEST_MS, MINUTE, tempDir } from './helpers.js';
import { startStandin, type Standin } from './standin.js';

// The server path end to end (docs/scaling.md): the three built-ins and the examples run through a
// ClickHouse server's HTTP interface (the stand-in over the embedded engine), and answer what the
// embedded engine answers over the same events. The server path had never run them whole: only pings,
// credentials and errors, against Debian's ClickHouse 18.16, which cannot run savedq's SQL.

const dir = tempDir('savedq-server-path-');
const examples = fileURLToPath(new URL('../sql/examples', import.meta.url));
const dataDir = join(dir, 'embedded');
let standin: Standin;

const PROJECTS = ['acme-shop', 'globex', 'initech'];
const PATHS = ['/rest/v1/orders', '/auth/v1/token', '/storage/v1/object/a.png', '/realtime/v1/websocket', '/graphql/v1'];
const METHODS = ['GET', 'POST', 'PATCH', 'DELETE'];
const STATUSES = [200, 200, 200, 201, 204, 301, 400, 404, 429, 500, 503];

/** Events around AT, the same every run: each project's requests and function invocations over two days. */
function events(): { edge: string[]; functions: string[] } {
  const edge: string[] = [];
  const functions: string[] = [];
  for (let i = 0; i < 1500; i++) {
    const project = PROJECTS[i % PROJECTS.length] as string;
    const path = PATHS[(i * 7) % PATHS.length] as string;
    const timestamp = atOffset(-((i * 97) % (48 * 60)) * MINUTE, (i * 13) % 1000);
    edge.push(
      JSON.stringify({
        id: `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
        timestamp,
        project,
        event_message: `${METHODS[i % METHODS.length]} ${path}`,
        metadata: { request: { method: METHODS[i % METHODS.length], url: `https://${project}.savedq.dev${path}?n=${i}`, path }, response: { status_code: STATUSES[(i * 5) % STATUSES.length] } },
      }),
    );
    if (i % 2 === 0) {
      functions.push(
        JSON.stringify({
          id: `00000000-0000-4000-9000-${i.toString(16).padStart(12, '0')}`,
          timestamp,
          event_message: `POST | ${STATUSES[(i * 3) % STATUSES.length]}`,
          metadata: { project_ref: project, function_id: `fn-${i % 4}`, execution_time_ms: 5 + ((i * 37) % 900) / 3, response: { status_code: STATUSES[(i * 3) % STATUSES.length] } },
        }),
      );
    }
  }
  return { edge, functions };
}

beforeAll(async () => {
  standin = await startStandin(join(dir, 'server'));
  const { edge, functions } = events();
  writeFileSync(join(dir, 'edge.ndjson'), `${edge.join('\n')}\n`);
  writeFileSync(join(dir, 'functions.ndjson'), `${functions.join('\n')}\n`);
  for (const where of [['--data-dir', dataDir], ['--url', standin.url]]) {
    for (const [table, file] of [['edge_logs', 'edge.ndjson'], ['function_edge_logs', 'functions.ndjson']] as const) {
      const loaded = await cli([...where, '--cache-file', join(dir, 'cache.sqlite'), 'load', table, join(dir, file)]);
      expect(loaded.stderr).toContain('loaded');
      expect(loaded.code).toBe(0);
    }
  }
}, LONG_TEST_MS);
afterAll(() => standin.stop());

/** The calls: every built-in and example, with parameters that select rows of the events above. */
const CALLS: [string, string[]][] = [
  ['usage.api-counts', ['project=acme-shop', 'interval=hourly']],
  ['usage.api-counts', ['project=globex', 'interval=daily']],
  ['functions.invocation-stats', ['project=initech', 'interval=1day']],
  ['logs.all', ['project=globex', `iso_timestamp_start=${atOffset(-2 * HOUR)}`]],
  ['errors.by-path', ['project=acme-shop', 'days=3']],
  ['functions.slowest', ['project=globex', 'hours=48', 'min_invocations=1']],
  ['status.classes-hourly', ['projects=acme-shop,initech']],
  ['traffic.daily', ['url=^https://acme-shop\\.', `since=${atOffset(-2 * 24 * HOUR).slice(0, 10)}`]],
];

describe('the built-ins and the examples through a ClickHouse server', () => {
  it.each(CALLS)('%s %s answers as the embedded engine does', async (query, params) => {
    const call = ['--cache-file', join(dir, 'cache.sqlite'), '--queries', examples, 'run', query, ...params.flatMap((p) => ['-p', p]), '--at', AT, '-f', 'json', '--no-cache'];
    await standin.forget();
    const [embedded, server] = await Promise.all([cli(['--data-dir', dataDir, ...call]), cli(['--url', standin.url, ...call])]);
    expect(server.stderr).toBe('');
    expect(server.code).toBe(0);
    expect(embedded.code).toBe(0);
    const rows = JSON.parse(server.stdout) as unknown[];
    expect(rows.length).toBeGreaterThan(0);
    expect(rows).toEqual(JSON.parse(embedded.stdout));
    // It did run on the server: the stand-in ran a SELECT of it.
    expect((await standin.statements()).some((s) => /^\s*(--[^\n]*\n\s*)*(WITH|SELECT)\b/i.test(s))).toBe(true);
  });
});
