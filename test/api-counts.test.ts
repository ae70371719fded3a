import { beforeAll, describe, expect, it } from 'vitest';
import { InputError } from '../src/errors.js';
import { AT, atOffset, DAY, findEndpoint, load, MINUTE, testLibrary } from './helpers.js';

const lib = testLibrary();

function request(host: string, path: string, timestamp: string): object {
  return {
    timestamp,
    project: host.split('.')[0],
    event_message: `GET ${path}`,
    metadata: { request: { method: 'GET', url: `https://${host}${path}?x=1`, path }, response: { status_code: 200 } },
  };
}

async function counts(project: string, interval: string) {
  const result = await lib.run({
    nameOrId: 'usage.api-counts',
    params: [
      ['project', project],
      ['interval', interval],
    ],
    at: AT,
    cache: 'skip',
  });
  return result.rows;
}

// AT is 2026-03-10T12:34:56.789012Z.
beforeAll(async () => {
  await load(lib, 'edge_logs', [
    // Window edges for minutely and hourly (both 60 minutes back) and daily (7 days back).
    request('edges.example', '/rest/v1/a', atOffset(-60 * MINUTE, -1)),
    request('edges.example', '/rest/v1/a', atOffset(-60 * MINUTE)),
    request('edges.example', '/rest/v1/a', atOffset(-1 * MINUTE)),
    request('edges.example', '/rest/v1/a', atOffset(2 * DAY)), // no upper bound
    request('edges.example', '/auth/v1/token', atOffset(-7 * DAY, -1)),
    request('edges.example', '/auth/v1/token', atOffset(-7 * DAY)),
    // Paths raising two counters, one, and none.
    request('paths.example', '/storage/v1/object/auth/avatar.png', '2026-03-10T12:00:00Z'),
    request('paths.example', '/realtime/v1/websocket', '2026-03-10T12:00:30Z'),
    request('paths.example', '/graphql/v1', '2026-03-10T12:10:00Z'),
    // Regular expressions over URLs.
    request('alpha.example', '/rest/v1/x', '2026-03-10T12:20:00Z'),
    request('beta.example', '/rest/v1/x', '2026-03-10T12:20:00Z'),
    request('gamma.example', '/rest/v1/x', '2026-03-10T12:20:00Z'),
    request('alphabet.example', '/rest/v1/x', '2026-03-10T12:20:00Z'),
  ]);
});

describe('usage.api-counts', () => {
  it('minutely: minute buckets of the last 60 minutes, window start inclusive, no upper bound', async () => {
    expect(await counts('edges\\.example', 'minutely')).toEqual([
      { timestamp: '2026-03-10T11:34:00Z', total_rest_requests: 1, total_storage_requests: 0, total_auth_requests: 0, total_realtime_requests: 0 },
      { timestamp: '2026-03-10T12:33:00Z', total_rest_requests: 1, total_storage_requests: 0, total_auth_requests: 0, total_realtime_requests: 0 },
      { timestamp: '2026-03-12T12:34:00Z', total_rest_requests: 1, total_storage_requests: 0, total_auth_requests: 0, total_realtime_requests: 0 },
    ]);
  });

  it('hourly: hour buckets of the last hour', async () => {
    const rows = await counts('edges\\.example', 'hourly');
    expect(rows.map((r) => [r.timestamp, r.total_rest_requests])).toEqual([
      ['2026-03-10T11:00:00Z', 1],
      ['2026-03-10T12:00:00Z', 1],
      ['2026-03-12T12:00:00Z', 1],
    ]);
  });

  it('daily: day buckets of the last 7 days, the window edge included and one microsecond earlier not', async () => {
    const rows = await counts('edges\\.example', 'daily');
    expect(rows.map((r) => [r.timestamp, r.total_rest_requests, r.total_auth_requests])).toEqual([
      ['2026-03-03T00:00:00Z', 0, 1],
      ['2026-03-10T00:00:00Z', 3, 0],
      ['2026-03-12T00:00:00Z', 1, 0],
    ]);
  });

  it('raises every counter a path contains, and keeps a bucket of zeros', async () => {
    expect(await counts('paths', 'minutely')).toEqual([
      { timestamp: '2026-03-10T12:00:00Z', total_rest_requests: 0, total_storage_requests: 1, total_auth_requests: 1, total_realtime_requests: 1 },
      { timestamp: '2026-03-10T12:10:00Z', total_rest_requests: 0, total_storage_requests: 0, total_auth_requests: 0, total_realtime_requests: 0 },
    ]);
  });

  it('matches project as an RE2 pattern anywhere in the URL: alternation and anchors', async () => {
    const total = async (pattern: string) =>
      (await counts(pattern, 'hourly')).reduce((n, r) => n + (r.total_rest_requests as number), 0);
    expect(await total('alpha|beta')).toBe(3); // alpha, beta and alphabet
    expect(await total('//(alpha|beta)\\.')).toBe(2);
    expect(await total('^https://gamma\\.')).toBe(1);
    expect(await total('^gamma')).toBe(0);
    // Every URL ends with ?x=1: the four above, and edges.example's three in the last hour and after it.
    expect(await total('x=1$')).toBe(7);
  });

  it('rejects an invalid pattern as bad input naming project', async () => {
    await expect(counts('(unclosed', 'hourly')).rejects.toThrow(InputError);
    await expect(counts('(unclosed', 'hourly')).rejects.toThrow(/parameter 'project'.*RE2/);
  });

  it('rejects a missing or unknown interval, listing the three', async () => {
    await expect(counts('x', 'weekly')).rejects.toThrow(/'interval': one of minutely, hourly, daily/);
    await expect(lib.run({ nameOrId: 'usage.api-counts', params: [['project', 'x']] })).rejects.toThrow(
      /missing parameter 'interval'.*minutely, hourly, daily/,
    );
  });

  it('answers the same by id as by name', async () => {
    const byId = await lib.run({
      nameOrId: findEndpoint('usage.api-counts').id,
      params: [
        ['interval', 'daily'],
        ['project', 'edges'],
      ],
      at: AT,
    });
    expect(byId.rows).toEqual(await counts('edges', 'daily'));
  });
});
