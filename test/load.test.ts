import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCommand } from '../src/commands/load.js';
import { InputError } from '../src/errors.js';
import { captureIo, tempDir, testLibrary } from './helpers.js';

const lib = testLibrary();
const dir = tempDir();

async function rowsOf(sql: string): Promise<Record<string, unknown>[]> {
  return (await lib.warehouse()).query(sql, {});
}

describe('savedq load', () => {
  it('loads good lines, names each bad line by number, and counts both', async () => {
    const file = join(dir, 'mixed.ndjson');
    writeFileSync(
      file,
      [
        JSON.stringify({ timestamp: '2026-03-10T12:00:00Z', project: 'mixed', event_message: 'one', metadata: { response: { status_code: 503 } } }),
        '{not json',
        '',
        JSON.stringify({ project: 'mixed', event_message: 'no time' }),
        JSON.stringify({ timestamp: 'yesterday', project: 'mixed' }),
        JSON.stringify({ timestamp: '2026-03-10T12:00:00Z' }),
        JSON.stringify({ timestamp: 1773144000000001, project: 'mixed', event_message: 'micros' }),
        JSON.stringify({ timestamp: '2026-03-10 12:00:00.5', project: 'mixed', event_message: 'no zone', id: 'not-a-uuid' }),
        JSON.stringify({ timestamp: '2026-03-10 12:00:00.5', project: 'mixed', event_message: 'no zone' }),
      ].join('\n'),
    );
    const io = captureIo();
    const error = await loadCommand(lib, { table: 'edge_logs', file }, io).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect(io.err()).toBe(
      [
        'line 2: not valid JSON',
        'line 4: missing timestamp',
        'line 5: invalid timestamp: expected ISO 8601 text or integer microseconds since the epoch',
        'line 6: missing project',
        'line 8: invalid id: expected a UUID',
        'loaded 3 rows into edge_logs, rejected 5 lines',
        '',
      ].join('\n'),
    );
    expect(await rowsOf("SELECT event_message, timestamp, status_code FROM edge_logs WHERE project = 'mixed' ORDER BY timestamp, event_message")).toEqual([
      { event_message: 'one', timestamp: '2026-03-10T12:00:00.000000Z', status_code: 503 },
      { event_message: 'micros', timestamp: '2026-03-10T12:00:00.000001Z', status_code: 0 },
      { event_message: 'no zone', timestamp: '2026-03-10T12:00:00.500000Z', status_code: 0 },
    ]);
  });

  it('takes a function invocation project from metadata.project_ref and types its fields', async () => {
    const event = {
      timestamp: '2026-03-10T12:00:00Z',
      event_message: 'POST',
      metadata: { project_ref: 'fn-proj', function_id: 'f-1', execution_time_ms: 12.5, response: { status_code: 404 } },
    };
    const io = captureIo(`${JSON.stringify(event)}\n${JSON.stringify({ ...event, metadata: {} })}\n`);
    await expect(loadCommand(lib, { table: 'function_edge_logs', file: '-' }, io)).rejects.toThrow(/1 line was rejected/);
    expect(io.err()).toContain('line 2: missing metadata.project_ref');
    expect(await rowsOf("SELECT project, function_id, execution_time_ms, status_code FROM function_edge_logs WHERE project = 'fn-proj'")).toEqual([
      { project: 'fn-proj', function_id: 'f-1', execution_time_ms: 12.5, status_code: 404 },
    ]);
  });

  it('accepts metadata as JSON text, as the tables export it', async () => {
    const io = captureIo(`${JSON.stringify({ timestamp: '2026-03-10 12:00:00.000001', project: 'exported', metadata: '{"response":{"status_code":418}}' })}\n`);
    await loadCommand(lib, { table: 'edge_logs', file: '-' }, io);
    expect(await rowsOf("SELECT status_code FROM edge_logs WHERE project = 'exported'")).toEqual([{ status_code: 418 }]);
    await expect(loadCommand(lib, { table: 'edge_logs', file: '-' }, captureIo('{"timestamp":"2026-01-01","project":"p","metadata":"[1]"}\n'))).rejects.toThrow(InputError);
  });

  it('loads the same file twice without duplicating a row', async () => {
    const file = join(dir, 'twice.ndjson');
    const lines = Array.from({ length: 250 }, (_, i) =>
      JSON.stringify({ timestamp: `2026-03-10T11:00:${String(i % 60).padStart(2, '0')}Z`, project: 'twice', event_message: `e${i}` }),
    );
    writeFileSync(file, `${lines.join('\n')}\n`);
    await loadCommand(lib, { table: 'edge_logs', file }, captureIo());
    await loadCommand(lib, { table: 'edge_logs', file }, captureIo());
    expect(await rowsOf("SELECT count() AS n, uniqExact(event_message) AS u FROM edge_logs WHERE project = 'twice'")).toEqual([{ n: 250, u: 250 }]);
  });

  it('refuses an unknown table or a missing file and loads nothing', async () => {
    await expect(loadCommand(lib, { table: 'edge_log', file: '-' }, captureIo())).rejects.toThrow(
      /unknown table "edge_log": one of edge_logs, function_edge_logs/,
    );
    await expect(loadCommand(lib, { table: 'edge_logs', file: join(dir, 'absent.ndjson') }, captureIo())).rejects.toThrow(
      /cannot read .*absent.ndjson: no such file/,
    );
  });

  it('generates sample data that gives every endpoint and interval rows', async () => {
    await loadCommand(lib, { sample: true }, captureIo());
    const now = new Date().toISOString();
    for (const interval of ['5min', '15min', '1hr', '1day', '7day']) {
      const r = await lib.run({ endpoint: 'functions.invocation-stats', params: [['project', 'acme-shop'], ['interval', interval]], at: now });
      expect(r.rows.length, interval).toBeGreaterThan(0);
    }
    for (const interval of ['minutely', 'hourly', 'daily']) {
      const r = await lib.run({ endpoint: 'usage.api-counts', params: [['project', 'acme-shop'], ['interval', interval]], at: now });
      expect(r.rows.length, interval).toBeGreaterThan(0);
    }
    const logs = await lib.run({ endpoint: 'logs.all', params: [['project', 'globex-api']], at: now });
    expect(logs.rows).toHaveLength(100);
  });
});
