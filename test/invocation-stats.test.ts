import { beforeAll, describe, expect, it } from 'vitest';
import { AT, load, testLibrary } from './helpers.js';

const lib = testLibrary();
const FN_A = '11111111-1111-4111-8111-111111111111';
const FN_B = '22222222-2222-4222-8222-222222222222';

function invocation(project: string, timestamp: string, ms = 10, status = 200, functionId = FN_A): object {
  return {
    timestamp,
    event_message: `POST | ${status}`,
    metadata: { project_ref: project, function_id: functionId, execution_time_ms: ms, response: { status_code: status } },
  };
}

async function stats(params: Record<string, string>) {
  const result = await lib.run({ nameOrId: 'functions.invocation-stats', params: Object.entries(params), at: AT, cache: 'skip' });
  return result.rows;
}

async function bucketsOf(project: string, interval?: string): Promise<Array<[unknown, unknown]>> {
  const params: Record<string, string> = { project };
  if (interval !== undefined) params.interval = interval;
  return (await stats(params)).map((r) => [r.timestamp, r.count]);
}

// AT is 2026-03-10T12:34:56.789012Z.
beforeAll(async () => {
  await load(lib, 'function_edge_logs', [
    // 1day: hour buckets from 2026-03-09T12:00 to 2026-03-10T12:00.
    invocation('day', '2026-03-09T11:59:59.999999Z'),
    invocation('day', '2026-03-09T12:00:00.000000Z'),
    invocation('day', '2026-03-09T12:30:00Z'),
    invocation('day', '2026-03-10T12:59:59.999999Z'), // after now, still in the last bucket
    invocation('day', '2026-03-10T13:00:00Z'),
    // 5min: second buckets from 12:29:56 to 12:34:56.
    invocation('five', '2026-03-10T12:29:55.999999Z'),
    invocation('five', '2026-03-10T12:29:56.000000Z'),
    invocation('five', '2026-03-10T12:34:56.999999Z'),
    invocation('five', '2026-03-10T12:34:57Z'),
    // 15min: minute buckets from 12:19 to 12:34.
    invocation('fifteen', '2026-03-10T12:18:59.999999Z'),
    invocation('fifteen', '2026-03-10T12:19:00Z'),
    invocation('fifteen', '2026-03-10T12:34:59.999999Z'),
    invocation('fifteen', '2026-03-10T12:35:00Z'),
    // 1hr: minute buckets from 11:34 to 12:34.
    invocation('hour', '2026-03-10T11:33:59.999999Z'),
    invocation('hour', '2026-03-10T11:34:00Z'),
    invocation('hour', '2026-03-10T12:34:30Z'),
    // 7day: day buckets from 2026-03-03 to 2026-03-10.
    invocation('week', '2026-03-02T23:59:59.999999Z'),
    invocation('week', '2026-03-03T00:00:00Z'),
    invocation('week', '2026-03-03T18:00:00Z'),
    invocation('week', '2026-03-10T23:59:59Z'),
    invocation('week', '2026-03-11T00:00:00Z'),
    // Statistics: 200 invocations in one hour bucket, 1..200 ms, every tenth one failing.
    ...Array.from({ length: 200 }, (_, i) =>
      invocation('stats', `2026-03-10T10:${String(i % 60).padStart(2, '0')}:00Z`, i + 1, i % 10 === 0 ? 500 : i % 10 === 1 ? 404 : 200),
    ),
    invocation('stats', '2026-03-10T11:00:00Z', 7, 399),
    // Two functions of one project.
    invocation('two-fns', '2026-03-10T12:00:00Z', 5, 200, FN_A),
    invocation('two-fns', '2026-03-10T12:01:00Z', 9, 200, FN_B),
    invocation('two-fns', '2026-03-10T12:02:00Z', 9, 200, FN_B),
  ]);
});

describe('functions.invocation-stats', () => {
  it('1day: hour buckets from trunc(now - 1 day) to trunc(now), including an entry after now', async () => {
    expect(await bucketsOf('day', '1day')).toEqual([
      ['2026-03-09T12:00:00Z', 2],
      ['2026-03-10T12:00:00Z', 1],
    ]);
  });

  it('treats an absent, empty or unknown interval as 1day', async () => {
    const expected = await bucketsOf('day', '1day');
    expect(await bucketsOf('day')).toEqual(expected);
    expect(await bucketsOf('day', '')).toEqual(expected);
    expect(await bucketsOf('day', 'weekly')).toEqual(expected);
  });

  it('5min: second buckets from 12:29:56 to 12:34:56', async () => {
    expect(await bucketsOf('five', '5min')).toEqual([
      ['2026-03-10T12:29:56Z', 1],
      ['2026-03-10T12:34:56Z', 1],
    ]);
  });

  it('15min: minute buckets from 12:19 to 12:34', async () => {
    expect(await bucketsOf('fifteen', '15min')).toEqual([
      ['2026-03-10T12:19:00Z', 1],
      ['2026-03-10T12:34:00Z', 1],
    ]);
  });

  it('1hr: minute buckets from 11:34 to 12:34', async () => {
    expect(await bucketsOf('hour', '1hr')).toEqual([
      ['2026-03-10T11:34:00Z', 1],
      ['2026-03-10T12:34:00Z', 1],
    ]);
  });

  it('7day: day buckets from 2026-03-03 to 2026-03-10', async () => {
    expect(await bucketsOf('week', '7day')).toEqual([
      ['2026-03-03T00:00:00Z', 2],
      ['2026-03-10T00:00:00Z', 1],
    ]);
  });

  it('computes min, max, avg, p95, p99 (actual values at those ranks), count and errors (>= 400)', async () => {
    const rows = await stats({ project: 'stats' });
    expect(rows).toEqual([
      {
        timestamp: '2026-03-10T10:00:00Z',
        min_execution_time: 1,
        max_execution_time: 200,
        avg_execution_time: 100.5,
        p95_execution_time: 191,
        p99_execution_time: 199,
        count: 200,
        error_count: 40,
      },
      {
        timestamp: '2026-03-10T11:00:00Z',
        min_execution_time: 7,
        max_execution_time: 7,
        avg_execution_time: 7,
        p95_execution_time: 7,
        p99_execution_time: 7,
        count: 1,
        error_count: 0,
      },
    ]);
  });

  it('counts one function when function_id is given, all when it is empty', async () => {
    const count = async (functionId?: string) =>
      (await stats(functionId === undefined ? { project: 'two-fns' } : { project: 'two-fns', function_id: functionId })).reduce(
        (n, r) => n + (r.count as number),
        0,
      );
    expect(await count(FN_B)).toBe(2);
    expect(await count(FN_A)).toBe(1);
    expect(await count('')).toBe(3);
    expect(await count()).toBe(3);
  });

  it('returns nothing for a project with no invocations', async () => {
    expect(await stats({ project: 'nobody' })).toEqual([]);
  });
});
