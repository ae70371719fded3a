import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cli, inTerminal, LONG_TEST_MS, startServe, tempDir, type ServeProcess } from '../helpers.js';
import { startStandin, type Standin, type StandinStatement } from '../standin.js';

// The ClickHouse users operators give savedq (docs/scaling.md, "The warehouse user"): read-only
// (readonly=1: no setting may be changed), read-only but for settings (readonly=2), and constrained
// (settings bounded by the profile). The stand-in refuses what ClickHouse refuses of each (Code 164,
// Code 452), and its engine runs in New York's time zone, as a server's may, so that a DateTime without
// a zone of its own is written in it.

const dir = tempDir('savedq-users-');
const queries = join(dir, 'queries');
let host: Standin;
let files = 0;

function events(): string {
  const start = Date.UTC(2026, 10, 30, 12);
  return Array.from({ length: 300 }, (_, i) => JSON.stringify({ timestamp: new Date(start + i * 60_000 + (i % 7) * 1000 + 0.000123).toISOString(), project: `p${i % 3}`, event_message: `GET /rest/v1/items/${i}` })).join('\n');
}

const QUERY = (name: string, header: string, sql: string) => `/*\ndescription: ${name}, for the users' tests.\nparams:\n  project:\n    type: string\n    required: true\n    description: The project.\n${header}*/\n${sql}\n`;

/** Values whose text depends on the output settings savedq asks for: times, 64-bit integers, inside arrays, maps and tuples. */
const VALUES_SQL = `SELECT project, count() AS n, max(timestamp) AS last, toDateTime(1764504000) AS server_time, toDateTime64(1751328000.25, 2, 'Asia/Kolkata') AS kolkata,
  toUInt64(18446744073709551615) AS big, [toUInt64(9007199254740993), 2] AS list, map('a', toInt64(-9007199254740993)) AS m,
  CAST((toUInt64(12345678901234567890), toDateTime(1751328000, 'UTC')), 'Tuple(a UInt64, b DateTime(\\'UTC\\'))') AS t, toNullable(toInt64(5)) AS maybe
FROM edge_logs WHERE project = @project GROUP BY project`;

beforeAll(async () => {
  mkdirSync(queries);
  writeFileSync(join(queries, 'values.sql'), QUERY('values', 'cache: 3600\nsandbox: true\n', VALUES_SQL));
  writeFileSync(join(queries, 'capped.sql'), QUERY('capped', 'limits:\n  read_rows: 1000\n', 'SELECT count() AS n FROM edge_logs WHERE project = @project'));
  writeFileSync(join(queries, 'values-seen.alert.yaml'), 'description: any row.\nquery: values\nparams: { project: p1 }\nwhen: n > 0\nevery: 1m\nnotify:\n  - command: ["true"]\n');
  writeFileSync(join(dir, 'events.ndjson'), `${events()}\n`);
  host = await startStandin(join(dir, 'host'), { env: { TZ: 'America/New_York' } });
  const loaded = await cli(['--url', host.url, '--cache-file', join(dir, 'setup.sqlite'), 'load', 'edge_logs', join(dir, 'events.ndjson')]);
  expect(loaded.code, loaded.stderr).toBe(0);
  await host.fault('profile reader readonly=1');
  await host.fault('profile settable readonly=2');
  await host.fault('profile bounded max_execution_time<=10 max_memory_usage<=2000000000');
  await host.fault('profile pinned max_rows_to_read=const');
}, LONG_TEST_MS);
afterAll(async () => {
  await host.stop();
});
let server: ServeProcess | undefined;
afterEach(async () => {
  server?.child.kill('SIGKILL');
  await server?.exited;
  server = undefined;
  await host.forget();
});

/** The host as a user sees it: its URL with the user's name. */
const as = (user: string) => host.url.replace('http://', `http://${user}@`);
function env(): Record<string, string> {
  return { SAVEDQ_CACHE_FILE: join(dir, `cache-${++files}.sqlite`), SAVEDQ_QUERIES: queries, SAVEDQ_DATA_DIR: join(dir, 'unused') };
}
/** What the host ran of a saved query (its tag in log_comment or in a leading comment). */
const ranOf = async (query: string): Promise<StandinStatement[]> => (await host.log()).filter((s) => (s.log_comment ?? s.query).includes(`{"query":"${query}"`) && !s.query.includes('EXPLAIN'));

describe('a read-only user (readonly=1)', () => {
  it("answers run, a caller's SQL, exports and an alert with the values a writer's answers have", async () => {
    const both = async (args: string[]) => {
      const [reader, writer] = await Promise.all([cli(['--url', as('reader'), ...args], { env: env() }), cli(['--url', host.url, ...args], { env: env() })]);
      expect(reader.code, reader.stderr).toBe(0);
      expect(writer.code, writer.stderr).toBe(0);
      expect(reader.stdout).toBe(writer.stdout);
      return reader.stdout;
    };
    const json = await both(['run', 'values', '-p', 'project=p1', '-f', 'json']);
    // As savedq's own settings have them: ISO 8601 in UTC (the server's zone and the column's applied), every digit.
    expect(json).toContain('"server_time":"2025-11-30T12:00:00Z"');
    expect(json).toContain('"kolkata":"2025-07-01T00:00:00.25Z"');
    expect(json).toContain('"big":18446744073709551615');
    expect(json).toContain('"list":[9007199254740993,2]');
    expect(json).toContain('"m":{"a":-9007199254740993}');
    expect(json).toContain('"t":{"a":12345678901234567890,"b":"2025-07-01T00:00:00Z"}');
    expect(json).toMatch(/"last":"2026-11-30T\d\d:\d\d:\d\d\.\d{6}Z"/);
    await both(['run', 'values', '-p', 'project=p2', '-f', 'csv']);
    await both(['run', 'values', '-p', 'project=p1', '-f', 'json', '--sql', 'SELECT n, big, last, server_time FROM result']);
    await both(['export', 'values', '-p', 'project=p0', '-f', 'ndjson']);
    await both(['export', 'values', '-p', 'project=p0', '-f', 'csv']);
    const alert = async (url: string) => {
      const r = await cli(['--url', url, 'alerts', 'test', 'values-seen'], { env: env() });
      expect(r.code, r.stderr).toBe(0);
      const sent = JSON.parse(r.stdout) as { rows: unknown[] };
      return sent.rows;
    };
    expect(await alert(as('reader'))).toEqual(await alert(host.url));
  });

  it('serve answers its calls with the same values; its statements send no setting and name the saved query in a leading comment', async () => {
    server = await startServe({ ...env(), SAVEDQ_API_KEYS: 'k1' }, ['--url', as('reader')]);
    const res = await fetch(`${server.url}/api/endpoints/query/values?project=p1`, { headers: { 'X-API-KEY': 'k1', 'X-Request-Id': 'req-read-only-1' } });
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain('"big":18446744073709551615');
    expect(body).toContain('"server_time":"2025-11-30T12:00:00Z"');
    const ran = (await ranOf('values')).filter((s) => s.refused === undefined);
    expect(ran).toHaveLength(1);
    const [statement] = ran as [StandinStatement];
    expect(statement.user).toBe('reader');
    expect(statement.settings).toEqual({});
    expect(statement.query).not.toMatch(/\bSETTINGS\b/);
    const tag = /^\/\* savedq (\{.*\}) \*\/\n/.exec(statement.query)?.[1];
    expect(JSON.parse(tag as string)).toEqual({ query: 'values', request_id: 'req-read-only-1', caller: 'key 1', version: expect.stringMatching(/^\d+\.\d+\.\d+/) as unknown });
    // /health, to a key, says the host's user is read-only and what that costs.
    const health = (await (await fetch(`${server.url}/health`, { headers: { 'X-API-KEY': 'k1' } })).json()) as { hosts: { user?: { readonly: number; costs: string[] } }[] };
    expect(health.hosts[0]?.user?.readonly).toBe(1);
    expect(health.hosts[0]?.user?.costs.join('\n')).toContain('savedq keeps the time limit itself');
  });

  it("refuses a definition's limits: before it runs, saying the user is read-only and that readonly=2 lets savedq set them", async () => {
    const run = await cli(['--url', as('reader'), 'run', 'capped', '-p', 'project=p1'], { env: env() });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'savedq: capped sets limits: read_rows in its definition, which the warehouse cannot apply: its user is read-only (readonly=1), so savedq can set no setting there; a profile with readonly=2 lets savedq set its limits (docs/scaling.md).\n',
    );
    // Nothing of it ran: the one statement sent was refused for its settings (what taught savedq the profile).
    expect((await ranOf('capped')).every((s) => s.refused === 164)).toBe(true);
    // A user that may set them (readonly=2) runs it under them.
    const settable = await cli(['--url', as('settable'), 'run', 'capped', '-p', 'project=p1', '-f', 'json'], { env: env() });
    expect(settable.code, settable.stderr).toBe(0);
    expect(JSON.parse(settable.stdout)).toEqual([{ n: 100 }]);
    expect((await ranOf('capped')).some((s) => s.user === 'settable' && s.refused === undefined && s.query.includes('max_rows_to_read = 1000'))).toBe(true);
  });

  it('refuses what it cannot do with a sentence each: a Parquet export, a load', async () => {
    const parquet = await cli(['--url', as('reader'), 'export', 'values', '-p', 'project=p1', '-f', 'parquet', '-o', join(dir, 'values.parquet')], { env: env() });
    expect(parquet.code).toBe(1);
    expect(parquet.stderr).toContain('its user is read-only (readonly=1), so savedq cannot set the Parquet and Arrow writers');
    const load = await cli(['--url', as('reader'), 'load', 'edge_logs', join(dir, 'events.ndjson')], { env: env() });
    expect(load.code).toBe(1);
    expect(load.stderr).toContain('its user is read-only (readonly=1): savedq reads with it, but cannot write with it');
  });

  it('status says, per host, that its user is read-only and what that costs', async () => {
    const status = await cli(['--url', as('reader'), '--url', as('bounded'), '--url', host.url, 'status'], { env: env() });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`${as('reader')}: answers\n             its user is read-only (readonly=1):\n             - no setting is sent`);
    expect(status.stdout).toContain(`${as('bounded')}: answers\n             its user has settings bounded by its profile:\n             - max_execution_time at most 10 s`);
    expect(status.stdout).toMatch(new RegExp(`${host.url.replace(/[.]/g, '\\.')}: answers\\n(?! {13})`));
    // In an 80-column terminal each cost is an item wrapped under its own first word, within the width.
    const shown = await inTerminal(['--url', as('reader'), 'status'], { env: env() });
    expect(shown.code, shown.stdout).toBe(0);
    const lines = shown.stdout.split('\n');
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(80);
    const item = lines.findIndex((l) => l.startsWith('             - no setting is sent'));
    expect(item, shown.stdout).toBeGreaterThan(0);
    expect(lines[item + 1]).toMatch(/^ {15}\S/);
  });
});

describe('a constrained user', () => {
  it('answers with its limits lowered to the bounds, and says so in --stats and to a terminal', async () => {
    const e = env();
    const run = await cli(['--url', as('bounded'), 'run', 'values', '-p', 'project=p1', '-f', 'json', '--stats'], { env: e });
    expect(run.code, run.stderr).toBe(0);
    const writer = await cli(['--url', host.url, 'run', 'values', '-p', 'project=p1', '-f', 'json'], { env: env() });
    expect(run.stdout).toBe(writer.stdout);
    expect(run.stderr).toContain("max_execution_time lowered to 10 s (from 30 s) by the warehouse user's profile");
    expect(run.stderr).toContain("max_memory_usage lowered to 2.0 GB (from 4.3 GB) by the warehouse user's profile");
    const sent = (await ranOf('values')).filter((s) => s.user === 'bounded' && s.refused === undefined);
    expect(sent.length).toBeGreaterThan(0);
    for (const s of sent) expect(s.query).toMatch(/max_execution_time = 10\b.*max_memory_usage = 2000000000\b/);
    const shown = await inTerminal(['--url', as('bounded'), 'run', 'values', '-p', 'project=p2', '--no-cache'], { env: env() });
    expect(shown.code, shown.stdout).toBe(0);
    // (Wrapped at the terminal's 80 columns, in the notes' grey.)
    // eslint-disable-next-line no-control-regex
    expect(shown.stdout.replace(/\x1b\[[0-9;]*m/g, '').replace(/\s+/g, ' ')).toContain("values: max_execution_time lowered to 10 s (from 30 s) by the warehouse user's profile values: max_memory_usage lowered");
  });

  it("refuses a definition's limit the profile fixes, naming it; a setting savedq chose is never a failure", async () => {
    const capped = await cli(['--url', as('pinned'), 'run', 'capped', '-p', 'project=p1'], { env: env() });
    expect(capped.code).toBe(1);
    expect(capped.stderr).toContain("capped sets limits: read_rows in its definition, which the warehouse cannot apply: its user's profile fixes them");
    const values = await cli(['--url', as('pinned'), 'run', 'values', '-p', 'project=p1', '-f', 'json'], { env: env() });
    expect(values.code, values.stderr).toBe(0);
  });
});
