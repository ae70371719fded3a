import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, eventually, startCli, tempDir, libraryOf, LONG_TEST_MS } from '../helpers.js';

const dir = tempDir();
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_LOCK_WAIT: '120' };
const AT = '2026-11-20T12:00:00Z';

function integrityCheck(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(file, sqlite3.OPEN_READONLY, (err) => {
      if (err) { reject(err); return; }
      db.get('PRAGMA integrity_check', (e, row: { integrity_check: string }) => {
        db.close();
        if (e) reject(e);
        else resolve(row.integrity_check);
      });
    });
  });
}

const calls: string[][] = [
  ['usage.api-counts', '-p', 'project=acme', '-p', 'interval=daily'],
  ['usage.api-counts', '-p', 'project=globex', '-p', 'interval=daily'],
  ['usage.api-counts', '-p', 'project=initech', '-p', 'interval=hourly'],
  ['usage.api-counts', '-p', 'project=umbrella', '-p', 'interval=minutely'],
  ['functions.invocation-stats', '-p', 'project=acme-shop', '-p', 'interval=7day'],
  ['functions.invocation-stats', '-p', 'project=globex-api', '-p', 'interval=1day'],
  ['functions.invocation-stats', '-p', 'project=initech-crm', '-p', 'interval=1hr'],
  ['logs.all', '-p', 'project=umbrella-labs', '-p', 'project_tier=PRO'],
];

/** The first call's answer before the load below, cached. */
let before: Row[] = [];
type Row = { total_rest_requests: number };
const restRequests = (rows: Row[]) => rows.reduce((n, row) => n + row.total_rest_requests, 0);

beforeAll(async () => {
  const r = await cli(['load', '--sample'], { env });
  expect(r.code, r.stderr).toBe(0);
  const warmed = await cli(['run', ...(calls[0] as string[]), '--at', AT], { env });
  expect(warmed.code, warmed.stderr).toBe(0);
  before = JSON.parse(warmed.stdout) as Row[];
}, LONG_TEST_MS);

describe('many processes on one cache file and one data directory', () => {
  it('8 runs, a warm and a load at once all succeed with the right rows, and the cache stays sound', async () => {
    // A REST request of the first call's project an hour before its instant: the load changes its answer.
    const file = join(dir, 'more.ndjson');
    writeFileSync(file, `${JSON.stringify({ timestamp: '2026-11-20T11:00:00Z', project: 'acme', event_message: 'x', metadata: { request: { url: 'https://acme.example/rest/v1/late', path: '/rest/v1/late' } } })}\n`);
    const results = await Promise.all([
      ...calls.map((c) => cli(['run', ...c, '--at', AT], { env })),
      cli(['warm'], { env }),
      cli(['load', 'edge_logs', file], { env }),
    ]);
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    // The same calls, one at a time and straight from the engine, give the same rows; the first, run
    // while the load ran, the rows before it or after it.
    const after = JSON.parse((await cli(['run', ...(calls[0] as string[]), '--at', AT, '--no-cache'], { env })).stdout) as Row[];
    expect(restRequests(after)).toBe(restRequests(before) + 1);
    expect([before, after]).toContainEqual(JSON.parse(results[0]?.stdout ?? ''));
    for (const [i, c] of calls.slice(1).entries()) {
      const direct = await cli(['run', ...c, '--at', AT, '--no-cache'], { env });
      expect(JSON.parse(results[i + 1]?.stdout ?? ''), c.join(' ')).toEqual(JSON.parse(direct.stdout));
    }
    // What the cache answers now is the answer after the load, whichever answer it kept while the load ran.
    const cached = await cli(['run', ...(calls[0] as string[]), '--at', AT, '--verbose'], { env });
    expect(JSON.parse(cached.stdout)).toEqual(after);
    expect(await integrityCheck(env.SAVEDQ_CACHE_FILE)).toBe('ok');
    const list = await cli(['cache', 'list', '-f', 'json'], { env });
    // At most the seven calls of cached endpoints, one answer each that may still be served: one
    // computed of the data before the load is listed as never served again (no expiry), and the first
    // call's is the one computed after it.
    const entries = JSON.parse(list.stdout) as { query: string; params: Record<string, string>; expires_in_seconds: number | null }[];
    const live = entries.filter((e) => e.expires_in_seconds !== null).map((e) => JSON.stringify([e.query, e.params]));
    expect(new Set(live).size).toBe(live.length);
    expect(live.length).toBeLessThanOrEqual(7);
    expect(live).toContain(JSON.stringify(['usage.api-counts', { project: 'acme', interval: 'daily' }]));
    expect(entries.every((e) => e.query !== 'logs.all')).toBe(true);
  }, LONG_TEST_MS);

  it('a second process waits for the data directory, then fails naming the holder', async () => {
    const holder = libraryOf({ dataDir: env.SAVEDQ_DATA_DIR, cacheFile: join(dir, 'other.sqlite') });
    await holder.warehouse();
    const started = Date.now();
    const blocked = await cli(['run', 'logs.all', '-p', 'project=x', '--lock-wait', '1'], { env });
    const waited = Date.now() - started;
    // Release it while a patient process is waiting: that one gets its turn.
    const patient = startCli(['run', 'logs.all', '-p', 'project=x', '--lock-wait', '60', '--verbose'], { env });
    await patient.waitFor(/^waiting for data directory .*, in use by process \d+/m);
    await holder.close();
    const served = await patient.done;
    expect(blocked.code).toBe(1);
    expect(blocked.stdout).toBe('');
    expect(blocked.stderr).toMatch(
      new RegExp(`^savedq: data directory .* is in use by process ${process.pid} \\(started [^)]+\\); gave up after 1 s`),
    );
    expect(waited).toBeGreaterThanOrEqual(1000);
    expect(served.code, served.stderr).toBe(0);
    expect(served.stdout).toBe('[]\n');
  });

  it('an engine of another program on the directory: savedq waits, then fails naming it; once it is gone, savedq goes on', async () => {
    const status = join(env.SAVEDQ_DATA_DIR, 'status');
    // chdb itself, not through savedq: only the engine's own status file says it holds the directory.
    const foreign = spawn(process.execPath, ['-e', `const { Session } = require('chdb'); new Session(${JSON.stringify(env.SAVEDQ_DATA_DIR)}); setInterval(() => {}, 1000);`], {
      cwd: join(import.meta.dirname, '..', '..'),
      stdio: 'ignore',
    });
    try {
      await eventually('chdb to hold the directory', () => existsSync(status) && readFileSync(status, 'utf8').includes(`PID: ${foreign.pid}`));
      const blocked = await cli(['run', 'logs.all', '-p', 'project=x', '--lock-wait', '1'], { env });
      expect(blocked.code).toBe(1);
      expect(blocked.stderr).toMatch(new RegExp(`^savedq: data directory .* is in use by process ${foreign.pid} \\(started [^)]+\\); gave up after 1 s`));
    } finally {
      foreign.kill('SIGKILL');
      await new Promise((r) => foreign.once('exit', r));
    }
    // Killed outright, it left its status file behind, naming a process that is gone.
    expect(existsSync(status)).toBe(true);
    const after = await cli(['run', 'logs.all', '-p', 'project=x', '--lock-wait', '1'], { env });
    expect(after.code, after.stderr).toBe(0);
  });

  it('a status file a killed engine left, whose PID another process has now, does not hold the directory', async () => {
    // As after a restart: the PID in the file is some other live process's, which has nothing open there.
    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      writeFileSync(join(env.SAVEDQ_DATA_DIR, 'status'), `PID: ${other.pid}\nStarted at: 2026-01-01 00:00:00\nRevision: 1\n`);
      const r = await cli(['run', 'logs.all', '-p', 'project=x', '--lock-wait', '1'], { env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe('[]\n');
    } finally {
      other.kill();
    }
  });
});
