import { describe, expect, it } from 'vitest';
import { readDefinition } from '../src/queries/definition.js';
import { lockChanges, lockedQuery, lockText, readLock, unversionedBreaking, type LockedQuery } from '../src/queries/lock.js';
import type { EngineColumn } from '../src/queries/shape.js';

// The lock (docs/queries.md): what each saved query promises, and each change to it breaking or compatible.

const HEAD = `/*
id: 0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01
params:
  project: { type: string, required: true }
  tier: { type: string, allowed: [FREE, PRO], other: reject, default: FREE }
  days: { type: integer, default: 1, min: 1, max: 90 }
fields:
  total: { type: integer }
  timestamp: { type: timestamp }
*/
SELECT count() AS total, max(timestamp) AS timestamp FROM edge_logs WHERE project = @project AND @tier != '' AND @days > 0
`;
const COLUMNS: EngineColumn[] = [
  { name: 'total', type: 'UInt64' },
  { name: 'timestamp', type: "DateTime64(6, 'UTC')" },
];

/** The query `q` as locked from a definition's text, and its columns. */
function locked(text: string, columns = COLUMNS): LockedQuery {
  const read = readDefinition('/q/q.sql', text, 'q', false);
  if (!read.query) throw new Error(JSON.stringify(read.problems));
  return lockedQuery(read.query, columns);
}
const base = { savedq_lock: 1, queries: { q: locked(HEAD) } };
const changes = (text: string, columns = COLUMNS) => lockChanges(base, { q: locked(text, columns) }).map((c) => `${c.kind}: ${c.what}`);

describe('the lock', () => {
  it('is stable JSON: keys by name, the same text for the same folder, read back as it was written', () => {
    const text = lockText([['q', locked(HEAD)]]);
    expect(text).toBe(lockText([['q', locked(HEAD)]]));
    expect(readLock(text, 'savedq.lock.json')).toEqual(base);
    const q = (JSON.parse(text) as { queries: { q: LockedQuery } }).queries.q;
    expect(Object.keys(q.params)).toEqual(['days', 'project', 'tier']);
    expect(q.fields).toEqual({ timestamp: { type: 'timestamp', nullable: false }, total: { type: 'integer', nullable: false } });
    expect(q.version).toBe(1);
    expect(() => readLock('{', 'x.json')).toThrow(/x\.json is not JSON/);
    expect(() => readLock('{"savedq_lock": 9, "queries": {}}', 'x.json')).toThrow(/written by a newer savedq/);
  });

  it('calls a field removed, renamed or retyped breaking, one added compatible, in words like dbt', () => {
    expect(changes(HEAD.replace('  timestamp: { type: timestamp }\n', ''), COLUMNS.slice(0, 1))).toEqual(['breaking: field timestamp removed']);
    expect(changes(HEAD.replace('  total: { type: integer }', '  count: { type: integer }'), [{ name: 'count', type: 'UInt64' }, COLUMNS[1] as EngineColumn])).toEqual(['breaking: field total removed', 'compatible: field count added']);
    expect(changes(HEAD.replace('timestamp: { type: timestamp }', 'timestamp: { type: string }'))).toEqual(['breaking: field timestamp: timestamp → string']);
    expect(changes(HEAD.replace('  timestamp: { type: timestamp }\n', '  timestamp: { type: timestamp }\n  p: { type: string }\n'), [...COLUMNS, { name: 'p', type: 'String' }])).toEqual(['compatible: field p added']);
    expect(changes(HEAD, [COLUMNS[0] as EngineColumn, { name: 'timestamp', type: "Nullable(DateTime64(6, 'UTC'))" }])).toEqual(['breaking: field timestamp may now be null']);
  });

  it('calls a parameter removed, made required, retyped or narrowed breaking; added optional or widened compatible', () => {
    const withoutDays = HEAD.replace('  days: { type: integer, default: 1, min: 1, max: 90 }\n', '').replace(' AND @days > 0', '');
    expect(changes(withoutDays)).toEqual(['breaking: parameter days removed']);
    expect(changes(HEAD.replace('days: { type: integer, default: 1,', 'days: { type: integer, required: true,'))).toEqual(['breaking: parameter days made required']);
    expect(changes(HEAD.replace('days: { type: integer,', 'days: { type: number,'))).toEqual(['breaking: parameter days: integer → number']);
    expect(changes(HEAD.replace('allowed: [FREE, PRO]', 'allowed: [FREE]'))).toEqual(['breaking: parameter tier: allowed values narrowed (PRO removed)']);
    expect(changes(HEAD.replace('allowed: [FREE, PRO]', 'allowed: [FREE, PRO, PAYG]'))).toEqual(['compatible: parameter tier: allowed values widened (PAYG added)']);
    expect(changes(HEAD.replace('max: 90', 'max: 30'))).toEqual(['breaking: parameter days: max lowered to 30']);
    expect(changes(HEAD.replace('max: 90', 'max: 365'))).toEqual(['compatible: parameter days: max raised to 365']);
    const added = (required: boolean) => HEAD.replace('params:\n', `params:\n  n: { type: integer${required ? ', required: true' : ', default: 1'} }\n`).replace('@days > 0', '@days > 0 AND @n > 0');
    expect(changes(added(false))).toEqual(['compatible: parameter n added']);
    expect(changes(added(true))).toEqual(['breaking: parameter n added, required']);
  });

  it('calls the SQL changed with the same shape compatible, and a query removed breaking, one added compatible', () => {
    expect(changes(HEAD.replace('count() AS total', 'count(*) AS total'))).toEqual(['compatible: the SQL changed, the same shape']);
    expect(lockChanges(base, {}).map((c) => `${c.query} ${c.kind}: ${c.what}`)).toEqual(['q breaking: query removed']);
    expect(lockChanges(base, { q: locked(HEAD), r: locked(HEAD) }).map((c) => `${c.query} ${c.kind}: ${c.what}`)).toEqual(['r compatible: query added']);
    expect(changes(HEAD.replace('id: 0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01', 'id: 1b4e28ba-2fa1-41d2-883f-0016d3cca427'))).toEqual(['breaking: id 0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01 → 1b4e28ba-2fa1-41d2-883f-0016d3cca427']);
  });

  it('fails only a breaking change whose version was not raised', () => {
    const retyped = HEAD.replace('timestamp: { type: timestamp }', 'timestamp: { type: string }');
    const now = { q: locked(retyped) };
    expect(unversionedBreaking(base, now, lockChanges(base, now))).toEqual(['q']);
    const raised = { q: locked(retyped.replace('/*\n', '/*\nversion: 2\n')) };
    expect(lockChanges(base, raised).map((c) => `${c.kind}: ${c.what}`)).toEqual(['breaking: field timestamp: timestamp → string', 'compatible: version 1 → 2']);
    expect(unversionedBreaking(base, raised, lockChanges(base, raised))).toEqual([]);
  });
});

describe('versions in the lock', () => {
  /** Version 1 of `q` kept as q@1.sql (with a sunset, if given). */
  const keptV1 = (sunset = '') => {
    const read = readDefinition('/q/q@1.sql', sunset === '' ? HEAD : HEAD.replace('/*\n', `/*\nsunset: ${sunset}\n`), 'q@1', false);
    if (!read.query) throw new Error(JSON.stringify(read.problems));
    return lockedQuery(read.query, COLUMNS);
  };
  const v2 = locked(HEAD.replace('/*\n', '/*\nversion: 2\n').replace('total: { type: integer }', 'total: { type: string }').replace('count() AS total', 'toString(count()) AS total'), [
    { name: 'total', type: 'String' },
    { name: 'timestamp', type: "DateTime64(6, 'UTC')" },
  ]);

  it('holds a newly kept version to what the lock promised of the query at that version, and passes the raised current one', () => {
    const now = { q: v2, 'q@1': keptV1() };
    const found = lockChanges(base, now);
    // q@1 is what the lock's q was: nothing to say of it.
    expect(found.map((c) => `${c.query} ${c.kind}: ${c.what}`)).toEqual(['q breaking: field total: integer → string', 'q compatible: version 1 → 2']);
    expect(unversionedBreaking(base, now, found)).toEqual([]);
    // The kept file changed in a way that breaks its callers: it fails, its version being the same.
    const broken = { q: v2, 'q@1': locked(HEAD.replace('total: { type: integer }', 'total: { type: string }').replace('count() AS total', 'toString(count()) AS total'), [{ name: 'total', type: 'String' }, COLUMNS[1] as EngineColumn]) };
    const brokenChanges = lockChanges(base, broken);
    expect(brokenChanges.filter((c) => c.query === 'q@1').map((c) => `${c.kind}: ${c.what}`)).toEqual(['breaking: field total: integer → string']);
    expect(unversionedBreaking(base, broken, brokenChanges)).toEqual(['q@1']);
  });

  it('calls a kept version removed past its sunset compatible (retired), and before it breaking', () => {
    const was = { savedq_lock: 1, queries: { q: v2, 'q@1': keptV1('2026-01-31') } };
    const at = (iso: string) => lockChanges(was, { q: v2 }, Date.parse(iso)).map((c) => `${c.query} ${c.kind}: ${c.what}`);
    expect(at('2026-02-01T00:00:00Z')).toEqual(['q@1 compatible: retired (past its sunset, 2026-01-31)']);
    expect(at('2026-01-30T23:59:59Z')).toEqual(['q@1 breaking: query removed']);
    expect(keptV1('2026-01-31').sunset).toBe('2026-01-31T00:00:00.000Z');
  });
});
