import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { executeQuery } from '../src/queries/run.js';
import { normaliseParams } from '../src/queries/params.js';
import { AT, AT_MICROS, atOffset, DAY, findEndpoint, HOUR, load, MINUTE, testLibrary } from './helpers.js';

const lib = testLibrary();

function edge(project: string, timestamp: string, message = `at ${timestamp}`): object {
  return {
    id: randomUUID(),
    timestamp,
    project,
    event_message: message,
    metadata: { request: { method: 'GET', url: `https://${project}.example/rest/v1/t`, path: '/rest/v1/t' }, response: { status_code: 200 } },
  };
}

async function messages(params: Record<string, string>): Promise<string[]> {
  const result = await lib.run({ nameOrId: 'logs.all', params: Object.entries(params), at: AT });
  return result.rows.map((r) => r.event_message as string);
}

/** Entries just inside, exactly at, and just outside a retention edge of `days` days. */
function edgeCase(project: string, days: number): object[] {
  return [
    edge(project, atOffset(-days * DAY, 1), 'inside by 1us'),
    edge(project, atOffset(-days * DAY), 'exactly at the edge'),
    edge(project, atOffset(-days * DAY, -1), 'outside by 1us'),
  ];
}

beforeAll(async () => {
  await load(lib, 'edge_logs', [
    ...edgeCase('tier-free', 1),
    ...edgeCase('tier-pro', 7),
    ...edgeCase('tier-payg', 90),
    ...edgeCase('tier-ent', 90),
    ...edgeCase('tier-unknown', 1),
    edge('tier-unknown', atOffset(-2 * DAY), 'two days old'),
    edge('range', atOffset(-3 * HOUR), 'minus 3h'),
    edge('range', atOffset(-2 * HOUR), 'minus 2h'),
    edge('range', atOffset(-1 * HOUR), 'minus 1h'),
    edge('range', atOffset(-1 * MINUTE), 'minus 1min'),
    edge('other-project', atOffset(-1 * MINUTE), 'not mine'),
    edge('after-at', atOffset(-1 * HOUR), 'before --at'),
    edge('after-at', atOffset(3 * HOUR), 'after --at'),
    ...Array.from({ length: 150 }, (_, i) => edge('many', atOffset(-i * MINUTE), `n${i}`)),
  ]);
});

describe('logs.all', () => {
  it('keeps only entries newer than now minus the FREE retention of 1 day, strictly', async () => {
    expect(await messages({ project: 'tier-free', project_tier: 'FREE' })).toEqual(['inside by 1us']);
  });

  it('has no upper bound, as the specification says: --at moves @now, not the data, so what came after it is returned (README, --at)', async () => {
    expect(await messages({ project: 'after-at' })).toEqual(['after --at', 'before --at']);
    expect(await messages({ project: 'after-at', iso_timestamp_end: AT })).toEqual(['before --at']);
  });

  it('uses 7 days for PRO', async () => {
    expect(await messages({ project: 'tier-pro', project_tier: 'PRO' })).toEqual(['inside by 1us']);
    expect(await messages({ project: 'tier-pro', project_tier: 'FREE' })).toEqual([]);
  });

  it('uses 90 days for PAYG and ENTERPRISE', async () => {
    expect(await messages({ project: 'tier-payg', project_tier: 'PAYG' })).toEqual(['inside by 1us']);
    expect(await messages({ project: 'tier-ent', project_tier: 'ENTERPRISE' })).toEqual(['inside by 1us']);
    expect(await messages({ project: 'tier-ent', project_tier: 'PRO' })).toEqual([]);
  });

  it('treats an unknown, lower-case or absent tier as 1 day', async () => {
    for (const tier of [undefined, 'pro', 'GOLD', '']) {
      const params: Record<string, string> = { project: 'tier-unknown' };
      if (tier !== undefined) params.project_tier = tier;
      expect(await messages(params)).toEqual(['inside by 1us']);
    }
  });

  it('excludes iso_timestamp_start itself and includes iso_timestamp_end itself', async () => {
    const start = atOffset(-3 * HOUR);
    const end = atOffset(-1 * HOUR);
    expect(await messages({ project: 'range', iso_timestamp_start: start, iso_timestamp_end: end })).toEqual([
      'minus 1h',
      'minus 2h',
    ]);
  });

  it('reads timestamps with an offset or without a zone as the same instants', async () => {
    // AT is 12:34:56.789012Z; 3 hours earlier is 09:34:56.789012Z = 11:34:56.789012+02:00.
    const withOffset = '2026-03-10T11:34:56.789012+02:00';
    const withoutZone = '2026-03-10 09:34:56.789012';
    expect(await messages({ project: 'range', iso_timestamp_start: withOffset })).toEqual(
      await messages({ project: 'range', iso_timestamp_start: withoutZone }),
    );
    expect(await messages({ project: 'range', iso_timestamp_start: withOffset })).toEqual([
      'minus 1min',
      'minus 1h',
      'minus 2h',
    ]);
  });

  it('applies no bound for empty range parameters', async () => {
    expect(await messages({ project: 'range', iso_timestamp_start: '', iso_timestamp_end: '' })).toHaveLength(4);
  });

  it('returns only the given project, newest first, at most 100 rows', async () => {
    const rows = await messages({ project: 'many' });
    expect(rows).toHaveLength(100);
    expect(rows[0]).toBe('n0');
    expect(rows[99]).toBe('n99');
    expect(await messages({ project: 'other-project' })).toEqual(['not mine']);
  });

  it('returns id, ISO timestamps with microseconds, the message and metadata as an object', async () => {
    const result = await lib.run({ nameOrId: 'logs.all', params: [['project', 'range']], at: AT });
    const row = result.rows[0] as Record<string, unknown>;
    expect(Object.keys(row)).toEqual(['id', 'timestamp', 'event_message', 'metadata']);
    expect(row.timestamp).toBe(atOffset(-1 * MINUTE));
    expect(row.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(row.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(row.metadata).toEqual({
      request: { method: 'GET', url: 'https://range.example/rest/v1/t', path: '/rest/v1/t' },
      response: { status_code: 200 },
    });
  });

  it('answers the same by id as by name', async () => {
    const byId = await lib.run({ nameOrId: findEndpoint('logs.all').id, params: [['project', 'many']], at: AT });
    const byName = await lib.run({ nameOrId: 'logs.all', params: [['project', 'many']], at: AT });
    expect(byId.rows).toEqual(byName.rows);
  });

  it('never returns more than the endpoint maximum, whatever the SQL says', async () => {
    const endpoint = { ...findEndpoint('logs.all'), maxRows: 7 };
    const { rows, truncated } = await executeQuery(await lib.warehouse(), endpoint, normaliseParams(endpoint, [['project', 'many']]), {
      now: AT_MICROS,
      timeoutSeconds: 30,
    });
    expect(rows.map((r) => r.event_message)).toEqual(['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6']);
    expect(truncated).toBe(true);
  });
});
