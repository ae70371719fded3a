import { describe, expect, it, vi } from 'vitest';
import { InputError, NotFoundError } from '../src/errors.js';
import { checkValue, normaliseParams, parsePairs } from '../src/queries/params.js';
import { toClickHouseParams } from '../src/queries/sql.js';
import { isLiteral, patternError } from '../src/queries/param-types.js';
import { DATE_EXACT, ISO_TIMESTAMP_EXACT, isoAt, parseIsoTimestamp, toClickHouseDateTime, toIsoMicros } from '../src/time.js';
import fc from 'fast-check';
import { asOfMicros } from '../src/calls/prepare.js';
import { QueryCatalog } from '../src/queries/catalog.js';
import type { ParamDefinition, SavedQuery } from '../src/queries/types.js';
import { builtinQueriesDir, examplesDir } from '../src/package.js';
import { builtins, endpoints, findEndpoint, testLibrary } from './helpers.js';

describe('timestamps', () => {
  it('reads Z, offsets and no zone (UTC) to the microsecond', () => {
    const z = parseIsoTimestamp('2026-03-10T12:34:56.789012Z');
    expect(z).toBe(1773146096789012n);
    expect(parseIsoTimestamp('2026-03-10T14:34:56.789012+02:00')).toBe(z);
    expect(parseIsoTimestamp('2026-03-10T07:04:56.789012-0530')).toBe(z);
    expect(parseIsoTimestamp('2026-03-10 12:34:56.789012')).toBe(z);
    expect(parseIsoTimestamp('2026-03-10T12:34:56.789012345Z')).toBe(z);
    expect(parseIsoTimestamp('2026-03-10')).toBe(1773100800000000n);
  });

  it.each(['', 'now', '2026-02-30T00:00:00Z', '2026-13-01', '2026-03-10T24:00:00Z', '2026-03-10T12:34:56+25:00', '12:00', '2026-3-1'])('rejects what is not a real instant: %j', (bad) => {
    expect(parseIsoTimestamp(bad)).toBeUndefined();
  });

  it("says in one pattern exactly the timestamps the parser takes, and the dates a date parameter takes (OpenAPI's and MCP's schemas)", () => {
    const exact = new RegExp(ISO_TIMESTAMP_EXACT);
    const date = new RegExp(DATE_EXACT);
    const dateParam: ParamDefinition = { name: 'd', type: 'date', required: false, description: '', other: 'reject' };
    const pad = (n: number, w = 2) => String(n).padStart(w, '0');
    const shaped = fc
      .tuple(
        fc.integer({ min: 1890, max: 2310 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        fc.option(fc.tuple(fc.constantFrom('T', 't', ' '), fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: 60 }), fc.option(fc.integer({ min: 0, max: 60 })))),
        fc.constantFrom('', 'Z', 'z', '+00:00', '-05:30', '+0530', '+02', '+24:00', '+05:60'),
      )
      .map(([y, mo, d, time, zone]) => `${pad(y, 4)}-${pad(mo)}-${pad(d)}${time ? `${time[0]}${pad(time[1])}:${pad(time[2])}${time[3] === null ? '' : `:${pad(time[3])}`}` : ''}${zone}`);
    fc.assert(fc.property(fc.oneof(shaped, fc.string({ maxLength: 30 })), (text) => exact.test(text) === (parseIsoTimestamp(text) !== undefined)), { numRuns: 20_000 });
    const days = fc.tuple(fc.integer({ min: 1960, max: 2160 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 })).map(([y, mo, d]) => `${pad(y, 4)}-${pad(mo)}-${pad(d)}`);
    fc.assert(fc.property(fc.oneof(days, fc.constantFrom('2149-06-06', '2149-06-07', '1970-01-01', '1969-12-31', '2100-02-29', '2000-02-29')), (text) => date.test(text) === 'value' in checkValue(dateParam, text)), { numRuns: 20_000 });
  });

  it('formats for ClickHouse and as ISO with microseconds, before 1970 too', () => {
    expect(toClickHouseDateTime(1773146096000001n)).toBe('2026-03-10 12:34:56.000001');
    expect(toIsoMicros(-1n)).toBe('1969-12-31T23:59:59.999999Z');
  });

  // In this order: the second kept from the call before is used, or must not be.
  it.each([1773146096000, 1773146096007, 1773146096056, 1773146096999, 1773146097000, 1773146096999, 0, 999, 1000, -1, -1000, -1001, 253402300799999, 253402300800000])(
    'says a log line\'s time as toISOString does: %d',
    (ms) => {
      expect(isoAt(ms)).toBe(new Date(ms).toISOString());
    },
  );
});

describe('parameters', () => {
  const logs = findEndpoint('logs.all');
  const stats = findEndpoint('functions.invocation-stats');

  it('normalises to every declared parameter with defaults, so equivalent calls are equal', () => {
    expect(normaliseParams(stats, [['project', 'p']])).toEqual({ project: 'p', function_id: '', interval: '1day' });
    expect(normaliseParams(stats, [['project', 'p'], ['interval', 'nonsense'], ['function_id', '']])).toEqual(
      normaliseParams(stats, [['interval', '1day'], ['project', 'p']]),
    );
    expect(normaliseParams(logs, [['project', 'p'], ['iso_timestamp_start', '2026-03-10T14:00:00+02:00']])).toMatchObject({
      iso_timestamp_start: '2026-03-10T12:00:00.000000Z',
    });
  });

  it('names an unknown parameter and suggests the closest', () => {
    expect(() => normaliseParams(stats, [['project', 'p'], ['intervall', '5min']])).toThrow(
      /unknown parameter "intervall" for functions.invocation-stats. Did you mean interval\? Parameters: project, function_id, interval/,
    );
  });

  it('treats an empty required parameter as missing', () => {
    expect(() => normaliseParams(logs, [['project', '']])).toThrow(/missing parameter 'project' for logs.all/);
    expect(() => normaliseParams(logs, [])).toThrow(InputError);
  });

  it('treats a required value that is nothing once read (a list of no item) as missing, so that it is never kept and warmed', async () => {
    const classes = (await new QueryCatalog({ builtin: builtinQueriesDir, user: [examplesDir] }).scan()).byName.get('status.classes-hourly') as SavedQuery;
    for (const value of [',', ' ', ',,', ' , ']) {
      expect(() => normaliseParams(classes, [['projects', value]]), JSON.stringify(value)).toThrow(/^missing parameter 'projects' for status\.classes-hourly: /);
    }
    expect(normaliseParams(classes, [['projects', ' acme-shop ,']]).projects).toBe('acme-shop');
  });

  it('names every missing parameter at once, before a value of another is judged', () => {
    const counts = findEndpoint('usage.api-counts');
    const both = "missing parameters for usage.api-counts: 'project' (an RE2 regular expression) and 'interval' (one of minutely, hourly, daily).";
    expect(() => normaliseParams(counts, [])).toThrow(both);
    expect(() => normaliseParams(counts, [['project', '']])).toThrow(both);
    expect(() => normaliseParams(counts, [['project', 'p']])).toThrow("missing parameter 'interval' for usage.api-counts: one of minutely, hourly, daily.");
    expect(() => normaliseParams(logs, [['iso_timestamp_end', 'yesterday']])).toThrow(/missing parameter 'project'/);
  });

  it('rejects a malformed timestamp, naming the parameter and the format', () => {
    expect(() => normaliseParams(logs, [['project', 'p'], ['iso_timestamp_end', 'yesterday']])).toThrow(
      /invalid value "yesterday" for parameter 'iso_timestamp_end': an ISO 8601 timestamp/,
    );
  });

  it('calls a value of the right shape out of range what it is: out of the engine\'s range, or of the declared bounds', async () => {
    expect(() => normaliseParams(logs, [['project', 'p'], ['iso_timestamp_start', '1800-01-01T00:00:00Z']])).toThrow(
      "invalid value \"1800-01-01T00:00:00Z\" for parameter 'iso_timestamp_start': a timestamp from 1900-01-01T00:00:00Z to 2299-12-31T23:59:59.999999Z in UTC (its offset applied), the range the engine holds.",
    );
    expect(() => normaliseParams(logs, [['project', 'p'], ['iso_timestamp_start', '2026-02-30T00:00:00Z']])).toThrow(/: an ISO 8601 timestamp such as/);
    // The instant in UTC, its offset applied, is what the engine must hold: its first and last instants, and just past them.
    for (const [value, held] of [['1900-01-01T00:00:00+05:00', false], ['1900-01-01T05:00:00+05:00', true], ['1900-01-01T00:00:00Z', true], ['2299-12-31T23:59:59-00:01', false], ['2299-12-31T23:59:59.999999Z', true], ['2299-12-31T23:59:00-00:00', true]] as const) {
      const check = () => normaliseParams(logs, [['project', 'p'], ['iso_timestamp_end', value]]);
      if (held) expect(check, value).not.toThrow();
      else expect(check, value).toThrow(/the range the engine holds\.$/);
    }
    expect(() => asOfMicros('2300-01-01T00:00:00Z')).toThrow('invalid --at "2300-01-01T00:00:00Z": expected a timestamp from 1900-01-01T00:00:00Z to 2299-12-31T23:59:59.999999Z in UTC (its offset applied), the range the engine holds.');
    const days = (await new QueryCatalog({ builtin: builtinQueriesDir, user: [examplesDir] }).scan()).byName.get('errors.by-path') as SavedQuery;
    for (const value of ['9223372036854775807', '9223372036854775808', '-99999999999999999999', '91']) {
      expect(() => normaliseParams(days, [['project', 'p'], ['days', value]]), value).toThrow(`invalid value "${value}" for parameter 'days': a base-10 integer from 1 to 90.`);
    }
  });

  it('rejects a parameter given twice', () => {
    expect(() => normaliseParams(logs, [['project', 'a'], ['project', 'b']])).toThrow(/given more than once/);
  });

  it('parses name=value pairs, keeping = inside values', () => {
    expect(parsePairs(['a=b=c', 'x='])).toEqual([['a', 'b=c'], ['x', '']]);
    expect(() => parsePairs(['novalue'])).toThrow(/expected name=value/);
    expect(() => parsePairs(['=v'])).toThrow(InputError);
  });
});

describe('patterns', () => {
  it('takes a literal as it is, its punctuation escaped or not, and asks RE2 of anything else', async () => {
    const { RE2JS } = await import('re2js');
    for (const literal of ['acme-shop', 'project-7\\.', 'api\\.example\\.com\\/v1', '\\(x\\)\\[\\]\\{\\}\\\\']) {
      expect(isLiteral(literal), literal).toBe(true);
      // What RE2 itself makes of it: the very text, matched literally.
      const text = literal.replace(/\\(.)/g, '$1');
      expect(RE2JS.compile(literal).matcher(`<${text}>`).find(), literal).toBe(true);
    }
    // An escaped letter or digit is a class, an anchor or an error; a bare special character is RE2's.
    for (const pattern of ['a\\d', 'x\\z', 'a.b', '(a', 'a\\', '\\ ']) expect(isLiteral(pattern), pattern).toBe(false);
    expect(patternError('x\\q')).toMatch(/invalid escape sequence/);
    expect(patternError('project-7\\.')).toBeUndefined();
  });
});

describe('built-in queries and SQL', () => {
  it('finds endpoints by name or id and suggests a name for a typo', async () => {
    for (const e of endpoints) {
      expect(await builtins.find(e.id)).toBe(e);
      expect(await builtins.find(e.name)).toBe(e);
      expect(await builtins.find(e.id.toUpperCase())).toBe(e);
    }
    await expect(builtins.find('logs.al')).rejects.toThrow(NotFoundError);
    await expect(builtins.find('logs.al')).rejects.toThrow(/Did you mean logs.all\?/);
  });

  it('has fixed, distinct UUIDs, 1000 max rows, and caching as the spec sets', () => {
    // The ids every release has kept, written out: a change of any is a break of every client's address.
    expect(endpoints.map((e) => [e.name, e.id])).toEqual([
      ['functions.invocation-stats', '5a9d3e71-2c84-4b6f-8e1d-7c0b9a4f2e12'],
      ['logs.all', '0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01'],
      ['usage.api-counts', 'c3e8f1a0-6b2d-4d7e-a9f5-1e4b8c2d7a23'],
    ]);
    expect(new Set(endpoints.map((e) => e.id)).size).toBe(3);
    // In file-name order: the built-ins are files of sql/queries now.
    expect(endpoints.map((e) => [e.name, e.maxRows, e.cacheSeconds, e.warmSeconds])).toEqual([
      ['functions.invocation-stats', 1000, 900, 300],
      ['logs.all', 1000, 0, 0],
      ['usage.api-counts', 1000, 900, 300],
    ]);
  });

  it('turns @name into typed parameters, leaving strings and comments alone', () => {
    const types = new Map([['p', 'String']]);
    expect(toClickHouseParams("SELECT @p, '@p', `@p` -- @p\n/* @p */ FROM t WHERE x = @p", types)).toBe(
      "SELECT {p:String}, '@p', `@p` -- @p\n/* @p */ FROM t WHERE x = {p:String}",
    );
    expect(() => toClickHouseParams('SELECT @nope', types)).toThrow(/undeclared parameter @nope/);
  });

  it('uses only declared parameters in every saved query, and pastes no value into the statement the engine is sent', async () => {
    for (const e of endpoints) {
      expect(e.boundSql).not.toMatch(/@[a-z_]/);
      for (const p of e.params) expect(e.sql).toContain(`@${p.name}`);
    }
    // A value that would be SQL were it pasted: the statement sent holds none of it, its parameters all of it.
    const lib = testLibrary();
    const measure = vi.spyOn(await lib.warehouse(), 'measure');
    const hostile = "x' OR 1=1; DROP TABLE edge_logs; --";
    await lib.run({ nameOrId: 'logs.all', params: [['project', hostile]], cache: 'skip' });
    const [sql, values] = measure.mock.calls[0] as [string, Record<string, unknown>];
    expect(sql).not.toContain('OR 1=1');
    expect(sql).toContain('{project:String}');
    expect(values.project).toBe(hostile);
  });
});
