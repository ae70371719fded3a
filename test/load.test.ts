import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadCommand } from '../src/commands/load.js';
import { InputError } from '../src/errors.js';
import { parseIsoTimestamp } from '../src/time.js';
import { batchMark, fileBatches, lineBatches, surveyLines } from '../src/load/batches.js';
import { loadEvents } from '../src/load/index.js';
import { splitLines } from '../src/warehouse/embedded.js';
import { bytesLiteral } from '../src/warehouse/remote.js';
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
    const first = captureIo();
    await loadCommand(lib, { table: 'edge_logs', file }, first);
    expect(first.err()).toBe('loaded 250 rows into edge_logs, rejected 0 lines\n');
    // The second time it says that nothing was stored, and why.
    const again = captureIo();
    await loadCommand(lib, { table: 'edge_logs', file }, again);
    expect(again.err()).toBe('loaded 0 rows into edge_logs, 250 there already (an earlier load of the same lines), rejected 0 lines\n');
    expect(await rowsOf("SELECT count() AS n, uniqExact(event_message) AS u FROM edge_logs WHERE project = 'twice'")).toEqual([{ n: 250, u: 250 }]);
    // With bad lines among them: a line, a line each, and what became of the others, said as it is.
    const mixed = join(dir, 'twice-mixed.ndjson');
    writeFileSync(mixed, `${lines[0]}\nnot json\n${lines[1]}\n`);
    const mixedFirst = captureIo();
    await expect(loadCommand(lib, { table: 'edge_logs', file: mixed }, mixedFirst)).rejects.toThrow('1 line was rejected; the other lines were loaded.');
    expect(mixedFirst.err()).toContain('loaded 2 rows into edge_logs, rejected 1 line\n');
    const mixedAgain = captureIo();
    await expect(loadCommand(lib, { table: 'edge_logs', file: mixed }, mixedAgain)).rejects.toThrow('1 line was rejected; the other lines were loaded before.');
    expect(mixedAgain.err()).toContain('loaded 0 rows into edge_logs, 2 there already (an earlier load of the same lines), rejected 1 line\n');
    const none = captureIo('not json\n');
    await expect(loadCommand(lib, { table: 'edge_logs', file: '-' }, none)).rejects.toThrow('1 line was rejected; no other line holds an event.');
  });

  it('refuses an unknown table or a missing file and loads nothing', async () => {
    await expect(loadCommand(lib, { table: 'edge_log', file: '-' }, captureIo())).rejects.toThrow(
      /unknown table "edge_log": one of edge_logs, function_edge_logs/,
    );
    await expect(loadCommand(lib, { table: 'edge_logs', file: join(dir, 'absent.ndjson') }, captureIo())).rejects.toThrow(
      /cannot read .*absent.ndjson: no such file/,
    );
    for (const batchMb of ['0', 'lots', '2048']) {
      await expect(loadCommand(lib, { table: 'edge_logs', file: '-', batchMb }, captureIo('{}\n'))).rejects.toThrow(
        /invalid --batch-mb .*: expected a number of megabytes from 1 to 1024/,
      );
    }
  });

  it('generates sample data that gives every endpoint and interval rows', async () => {
    const before = Date.now();
    await loadCommand(lib, { sample: true }, captureIo());
    const now = new Date().toISOString();
    // Each project's first function runs in every minute of the clock of the last three hours (docs/loading.md).
    const minute = Math.floor(before / 60_000) * 60_000;
    const minutes = await (await lib.warehouse()).query(
      'SELECT project, uniqExact(toStartOfMinute(timestamp)) AS n FROM function_edge_logs WHERE timestamp >= fromUnixTimestamp64Milli({from:Int64}) AND timestamp < fromUnixTimestamp64Milli({to:Int64}) GROUP BY project ORDER BY project',
      { from: minute - 178 * 60_000, to: minute + 60_000 },
    );
    expect(minutes.map((r) => [r.project, Number(r.n)])).toEqual(['acme-shop', 'globex-api', 'initech-crm', 'umbrella-labs'].map((p) => [p, 179]));
    for (const interval of ['5min', '15min', '1hr', '1day', '7day']) {
      const r = await lib.run({ nameOrId: 'functions.invocation-stats', params: [['project', 'acme-shop'], ['interval', interval]], at: now });
      expect(r.rows.length, interval).toBeGreaterThan(0);
    }
    for (const interval of ['minutely', 'hourly', 'daily']) {
      const r = await lib.run({ nameOrId: 'usage.api-counts', params: [['project', 'acme-shop'], ['interval', interval]], at: now });
      expect(r.rows.length, interval).toBeGreaterThan(0);
    }
    const logs = await lib.run({ nameOrId: 'logs.all', params: [['project', 'globex-api']], at: now });
    expect(logs.rows).toHaveLength(100);
  });
});

/** Loads lines as one batch; returns what the load reported. */
async function loadAll(lines: readonly string[], options: { batchBytes?: number } = {}) {
  const rejects: string[] = [];
  const report = await loadEvents(await lib.warehouse(), 'edge_logs', [`${lines.join('\n')}\n`], {
    ...options,
    onReject: (line, reason) => rejects.push(`${line}: ${reason}`),
  });
  return { ...report, rejects };
}

const MIN_MICROS = -2208988800000000n; // 1900-01-01
const MAX_MICROS = 10413791999999999n; // 2299-12-31T23:59:59.999999

describe('the load rules, read fast or line by line', () => {
  const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
  const isoLike = fc
    .tuple(
      fc.integer({ min: 1895, max: 2305 }),
      fc.integer({ min: 0, max: 13 }),
      fc.integer({ min: 0, max: 32 }),
      fc.option(
        fc.tuple(
          fc.constantFrom('T', 't', ' ', '_'),
          fc.integer({ min: 0, max: 25 }),
          fc.integer({ min: 0, max: 61 }),
          fc.option(fc.tuple(fc.integer({ min: 0, max: 61 }), fc.option(fc.tuple(fc.constantFrom('.', ','), fc.stringMatching(/^[0-9]{0,10}$/))))),
        ),
      ),
      fc.constantFrom('', 'Z', 'z', '+00:00', '-05:30', '+0530', '+02', '+14:00', '-23:59', '+24:00', '+05:60', 'UTC'),
    )
    .map(([y, mo, d, time, zone]) => {
      let text = `${pad(y, 4)}-${pad(mo)}-${pad(d)}`;
      if (time) {
        const [sep, h, mi, rest] = time;
        text += `${sep}${pad(h)}:${pad(mi)}`;
        if (rest) text += `:${pad(rest[0])}${rest[1] ? rest[1][0] + rest[1][1] : ''}`;
      }
      return text + zone;
    });
  const expected = (text: string): bigint | undefined => {
    const micros = parseIsoTimestamp(text);
    return micros !== undefined && micros >= MIN_MICROS && micros <= MAX_MICROS ? micros : undefined;
  };

  it('read every timestamp as --at reads it, to the microsecond, on both paths', async () => {
    const edges = [
      '1900-01-01T00:00:00Z', '1900-01-01T00:00:00+01:00', '1900-01-01T00:00:00-01:00', '2299-12-31T23:59:59.999999Z',
      '2299-12-31T23:59:59-01:00', '2299-12-31T23:59:59+01:00', '2026-03-10T12:34:56.9999999Z', '2026-03-10T12:34:56.123456789+05:30',
      '2024-02-29', '2023-02-29', '2100-02-29', '2000-02-29T12:00Z', '2026-03-10T24:00:00Z', '2026-03-10 12:34', '2026-03-10t12:34:56,5z',
      '2026-03-10-05:00', '2026-03-10+0530', '2026-03-10T12:34:56+05', '1969-12-31T23:59:59.999999Z', '2026-04-31', '2026-03-10T12:34:60Z',
    ];
    const texts = [...edges, ...fc.sample(isoLike, { numRuns: 400, seed: 20261122 }), ...fc.sample(fc.string(), { numRuns: 50, seed: 1 })];
    const line = (prefix: string, text: string, i: number) => JSON.stringify({ timestamp: text, project: `${prefix}-${i}` });
    // All of them: some are bad, so this batch is read line by line.
    const mixed = await loadAll(texts.map((t, i) => line('iso-strict', t, i)));
    expect(mixed.rechecked).toBe(1);
    // Only the good ones: the fast path takes the batch whole.
    const good = texts.map((t, i) => [t, i] as const).filter(([t]) => expected(t) !== undefined);
    const fast = await loadAll(good.map(([t, i]) => line('iso-fast', t, i)));
    expect(fast).toMatchObject({ rechecked: 0, rejected: 0, loaded: good.length });
    expect(good.length).toBeGreaterThan(50);

    const stored = new Map(
      (await rowsOf("SELECT project, toString(toUnixTimestamp64Micro(timestamp)) AS micros FROM edge_logs WHERE project LIKE 'iso-%'")).map(
        (r) => [r.project as string, BigInt(r.micros as string)],
      ),
    );
    texts.forEach((text, i) => {
      expect(stored.get(`iso-strict-${i}`), text).toBe(expected(text));
      if (expected(text) !== undefined) expect(stored.get(`iso-fast-${i}`), text).toBe(expected(text));
    });
    expect(mixed.rejected).toBe(texts.length - good.length);
  });

  it('store the same row whichever path reads a line', async () => {
    const text = fc.string({ maxLength: 12 });
    const value = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 }), fc.dictionary(text, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }));
    const event = fc.record(
      {
        timestamp: fc.oneof(
          { arbitrary: fc.constantFrom('2026-03-10T12:00:00Z', '2026-03-10 12:00:00.123456', '2026-03-10T12:00:00+02:00'), weight: 3 },
          { arbitrary: fc.integer({ min: 0, max: 2 ** 52 }), weight: 2 },
          { arbitrary: value, weight: 1 },
        ),
        project: fc.oneof({ arbitrary: text.map((t) => `p-${t}`), weight: 6 }, text.map((t) => `{${t}`), value),
        event_message: fc.oneof({ arbitrary: text, weight: 6 }, text.map((t) => `{"not":"an object"}${t}`), value),
        metadata: fc.oneof(
          { arbitrary: fc.dictionary(text, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }), weight: 4 },
          { arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)), weight: 2 },
          { arbitrary: value, weight: 1 },
        ),
      },
      { requiredKeys: [] },
    );
    const events = fc.sample(event, { numRuns: 300, seed: 7 });
    const idsA = events.map(() => randomUUID());
    const idsB = events.map(() => randomUUID());
    const lines = (ids: string[]) => events.map((e, i) => JSON.stringify({ id: ids[i], ...e }));
    // Line by line (the batch has bad lines) ...
    const strict = await loadAll(lines(idsA));
    expect(strict.rechecked).toBe(1);
    // ... and, for the lines that were good, all at once on the fast path.
    const refused = new Set(strict.rejects.map((r) => Number(r.split(':')[0]) - 1));
    // Text that starts with { could be an object's text: the fast path leaves such lines to the strict one.
    const plain = (v: unknown) => typeof v !== 'string' || !v.startsWith('{');
    const good = events.map((_, i) => i).filter((i) => !refused.has(i) && plain(events[i]?.project) && plain(events[i]?.event_message));
    const fast = await loadAll(good.map((i) => lines(idsB)[i] as string));
    expect(fast).toMatchObject({ rechecked: 0, rejected: 0, loaded: good.length });
    expect(good.length).toBeGreaterThan(30);

    const stored = async (ids: string[]) =>
      new Map(
        (await rowsOf(`SELECT toString(id) AS id, toString(timestamp) AS t, project, event_message, metadata, status_code FROM edge_logs WHERE id IN (${ids.map((id) => `'${id}'`).join(',')})`)).map((r) => [
          r.id as string,
          { ...r, id: undefined, metadata: JSON.parse(r.metadata as string) as unknown },
        ]),
      );
    const [a, b] = [await stored(idsA), await stored(idsB)];
    expect(a.size).toBe(events.length - refused.size);
    for (const i of good) expect(b.get(idsB[i] as string), lines(idsA)[i]).toEqual(a.get(idsA[i] as string));
  });

  it('name refused lines by their number in the whole input, across batches', async () => {
    const good = (i: number) => JSON.stringify({ timestamp: '2026-03-10T12:00:00Z', project: 'numbered', event_message: `m${i}` });
    const lines = Array.from({ length: 3000 }, (_, i) => (i === 1234 ? '{"project":"numbered"}' : i === 2999 ? 'oops' : good(i)));
    lines.splice(10, 0, '', '   ');
    const r = await loadAll(lines, { batchBytes: 16 * 1024 });
    expect(r.rejects).toEqual(['1237: missing timestamp', '3002: not valid JSON']);
    expect(r).toMatchObject({ lines: 3002, loaded: 2998, rejected: 2 });
    expect(await rowsOf("SELECT count() AS n FROM edge_logs WHERE project = 'numbered'")).toEqual([{ n: 2998 }]);
  });

  it('read line by line, refuse what is not strict JSON, by number', async () => {
    const ok = '"timestamp":"2026-03-10T12:00:00Z","project":"lenient"';
    const r = await loadAll([
      `{${ok},"event_message":"a\\x"}`, // an escape JSON does not have
      `{${ok},"event_message":"tab\there"}`, // a raw control character in a string
      `{${ok}}{${ok}}`, // two objects on one line
      `{${ok},"project":"repeated"}`, // a repeated key: the first one counts
      `{${ok},"metadata":{"a":1,}}`, // a trailing comma
    ]);
    expect(r.rejects).toEqual(['1: not valid JSON', '2: not valid JSON', '3: not valid JSON', '5: not valid JSON']);
    expect(await rowsOf("SELECT project FROM edge_logs WHERE project IN ('lenient', 'repeated')")).toEqual([{ project: 'lenient' }]);
  });

  it('stores in each computed column what the table itself would compute from the row', async () => {
    // The load computes the tables' MATERIALIZED columns in its own statement (src/warehouse/index.ts).
    // Over every row the tests above loaded, on both paths, into both tables:
    for (const table of ['edge_logs', 'function_edge_logs']) {
      const columns = await rowsOf(
        `SELECT name, default_expression AS expression FROM system.columns WHERE table = '${table}' AND default_kind = 'MATERIALIZED'`,
      );
      expect(columns.length).toBeGreaterThan(2);
      const [counts] = await rowsOf(
        `SELECT count() AS rows, ${columns.map((c, i) => `countIf(NOT (${String(c.name)} <=> (${String(c.expression)}))) AS c${i}`).join(', ')} FROM ${table}`,
      );
      expect(Number(counts?.rows)).toBeGreaterThan(100);
      for (const [i, c] of columns.entries()) expect([c.name, Number(counts?.[`c${i}`])]).toEqual([c.name, 0]);
    }
  });

  it('finishes a batch a killed load left half stored, without losing or repeating a row', async () => {
    // 60 events over 9 weeks: one batch, nine partitions (weekly), each stored as one part.
    const events = Array.from({ length: 60 }, (_, i) => ({
      id: randomUUID(),
      timestamp: new Date(Date.UTC(2026, 0, 5) + i * 25 * 3_600_000).toISOString(),
      project: 'unfinished',
      event_message: `e${i}`,
      metadata: { request: { path: `/p/${i}` } },
    }));
    const lines = Buffer.from(`${events.map((e) => JSON.stringify(e)).join('\n')}\n`);
    const mark = batchMark('edge_logs', lines);
    const warehouse = await lib.warehouse();
    // What a killed load can leave: the first weeks' parts committed with the batch's mark, the later
    // weeks' never written, and one committed week's part lost after the engine recorded it (as a
    // process killed between recording a part's deduplication token and committing the part leaves it).
    const firstWeeks = events.filter((e) => e.timestamp < '2026-02-02');
    await warehouse.command(
      `INSERT INTO edge_logs (id, timestamp, project, event_message, metadata, load_batch)
       SELECT id, timestamp, project, event_message, metadata, {mark:UInt64} FROM format(JSONEachRow, {rows:String})
       SETTINGS insert_deduplication_token = 'savedq-${mark}'`,
      { mark, rows: firstWeeks.map((e) => JSON.stringify({ ...e, metadata: JSON.stringify(e.metadata) })).join('\n') },
    );
    await warehouse.command("DELETE FROM edge_logs WHERE project = 'unfinished' AND toMonday(timestamp) = '2026-01-12'");
    const stored = async () =>
      (await rowsOf("SELECT event_message, count() AS n FROM edge_logs WHERE project = 'unfinished' GROUP BY event_message")).map((r) => [r.event_message, Number(r.n)]);
    expect((await stored()).length).toBeLessThan(events.length - 10);

    await loadEvents(warehouse, 'edge_logs', [lines]);
    const all = events.map((e) => [e.event_message, 1]);
    expect((await stored()).sort()).toEqual(all.sort());
    // Nothing of the recovery is left behind: it is the rows' marks, declared in the schema.
    expect(existsSync(join(lib.config.dataDir, 'savedq-unfinished'))).toBe(false);
    // Loading it again is a no-op, as for any stored batch.
    await loadEvents(warehouse, 'edge_logs', [lines]);
    expect((await stored()).sort()).toEqual(all.sort());
  });

  it('cut any input into the same batches, however it arrives in pieces', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: fc.constantFrom('a', 'b', '\n'), maxLength: 300 }), fc.array(fc.nat(300)), fc.integer({ min: 1, max: 40 }), async (text, cuts, size) => {
        const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((x, y) => x - y);
        const pieces = [0, ...points].map((p, i) => text.slice(p, points[i] ?? text.length)).filter((p) => p !== '');
        const collect = async (source: Iterable<string>) => {
          const out: string[] = [];
          for await (const batch of lineBatches(source, size)) out.push(batch.toString());
          return out;
        };
        const whole = await collect([text]);
        expect(await collect(pieces)).toEqual(whole);
        expect(whole.join('')).toBe(text);
        for (const batch of whole.slice(0, -1)) expect(batch.endsWith('\n') && batch.length >= size).toBe(true);
      }),
    );
  });

  it('cut a file read into reused buffers exactly as a stream, and never overwrite a batch still held', async () => {
    const file = join(dir, 'batches.ndjson');
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: fc.constantFrom('a', 'b', '\n'), maxLength: 300 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 2, max: 4 }),
        async (text, size, readBytes, slots) => {
          writeFileSync(file, text);
          const expected: string[] = [];
          for await (const batch of lineBatches([text], size)) expected.push(batch.toString());
          // As loadEvents does: a buffer is free once the batch read into it is released, and the
          // caller holds up to slots - 1 batches while the next is read.
          const held: { lines: Buffer; text: string; release: () => void }[] = [];
          const released: Promise<void>[] = [];
          const got: string[] = [];
          const fd = openSync(file, 'r');
          try {
            for await (const { lines, slot } of fileBatches(fd, size, slots, (s) => released[s] ?? Promise.resolve(), readBytes)) {
              if (held.length === slots - 1) {
                const oldest = held.shift();
                expect(oldest?.lines.toString()).toBe(oldest?.text); // untouched while held
                got.push(oldest?.text ?? '');
                oldest?.release();
              }
              let release = (): void => undefined;
              released[slot] = new Promise((resolve) => (release = resolve));
              held.push({ lines, text: lines.toString(), release });
            }
          } finally {
            closeSync(fd);
          }
          got.push(...held.map((h) => h.lines.toString()));
          expect(got).toEqual(expected);
        },
      ),
    );
  });

  it('split a batch at line ends into the parts its inserts read', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('a', '\n'), minLength: 1, maxLength: 200 }), fc.integer({ min: 1, max: 8 }), (text, count) => {
        const parts = splitLines(Buffer.from(text), count).map((p) => p.toString());
        expect(parts.join('')).toBe(text);
        expect(parts.length).toBeLessThanOrEqual(count);
        expect(parts.every((p) => p.length > 0)).toBe(true);
        for (const part of parts.slice(0, -1)) expect(part.endsWith('\n')).toBe(true);
      }),
    );
    expect(splitLines(Buffer.from('aa\nbb\ncc\ndd\n'), 2).map(String)).toEqual(['aa\nbb\n', 'cc\ndd\n']);
  });

  it('carry a batch to a server as a literal that gives back every byte', async () => {
    // How a batch reaches a server's rejects query; checked here on the embedded engine.
    const bytes = Buffer.concat([Buffer.from('{"a":"it\'s \\ \\"q\\" é"}\n\t\r\n'), Buffer.from([0xff, 0x00, 0x7f, 0x0a])]);
    const rows = await rowsOf(`SELECT hex(line) AS h FROM format(LineAsString, ${bytesLiteral(bytes)})`);
    const expected = bytes.toString('latin1').split('\n').slice(0, -1).map((l) => Buffer.from(l, 'latin1').toString('hex').toUpperCase());
    expect(rows.map((r) => r.h)).toEqual(expected);
  });

  it('count lines, blank lines and whether each line looks like one object', () => {
    expect(surveyLines(Buffer.from('{"a":1}\n\n  \r\n{}'))).toEqual({ lines: 4, blank: 2, shaped: true });
    expect(surveyLines(Buffer.from('{"a":1}\n[1]\n'))).toEqual({ lines: 2, blank: 0, shaped: false });
    expect(surveyLines(Buffer.from(' {"a":1} \r\n'))).toEqual({ lines: 1, blank: 0, shaped: true });
  });
});
