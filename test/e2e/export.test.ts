import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, eventually, inTerminal, LONG_TEST_MS, runProgram, savedqCommandLine, startCli, startServe, tempDir, EVENT_DEADLINE_MS } from '../helpers.js';
import { startStandin, type Standin } from '../standin.js';
import { has } from '../system.js';

// `savedq export` and serve's export route (CONTRACT §19): every row past the row cap, in each format,
// read back by readers savedq did not write (DuckDB for Parquet and CSV, Apache Arrow's for the Arrow
// stream) and compared value by value with the NDJSON export; the file written whole or not at all; a
// stream cut seen as cut; memory that stays flat.

const dir = tempDir('savedq-export-');
const queries = join(dir, 'queries');
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_QUERIES: queries };
const EVENTS = 40;

const QUERY = (header: string, sql: string) => `/*\ndescription: for the export tests.\n${header}*/\n${sql}\n`;

/** Values that trip a writer: a line feed, a carriage return, quotes, commas, a tab, accents and CJK, a NUL. */
const MESSAGES = ['plain', 'line one\nline two', 'a "quoted", comma', 'tab\there\r\nCRLF', 'é 日本 ✓', 'nul \u0000 inside', "'=1+1"];

function events(): string {
  const start = Date.UTC(2026, 10, 30, 12);
  return Array.from({ length: EVENTS }, (_, i) =>
    JSON.stringify({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      // Microseconds that a millisecond clock would lose.
      timestamp: `${new Date(start + i * 60_000).toISOString().slice(0, 19)}.${String(123456 + i).padStart(6, '0')}Z`,
      project: 'p',
      event_message: MESSAGES[i % MESSAGES.length],
      metadata: { request: { method: 'GET', path: `/items/${i}`, tags: ['a', i] }, response: { status_code: 200 + i } },
    }),
  ).join('\n');
}

let duck: DuckDBConnection;

beforeAll(async () => {
  mkdirSync(queries);
  // Every event, past a row cap of 5; 64-bit integers past 2^32 either way, exact in a double.
  writeFileSync(
    join(queries, 'every.sql'),
    QUERY(
      'params:\n  project: { type: string, required: true }\nfields:\n  id: { type: string }\n  timestamp: { type: timestamp }\n  event_message: { type: string }\n  metadata: { type: object }\n  big: { type: integer }\n  small: { type: integer }\nmax_rows: 5\nsandbox: true\n',
      'SELECT id, timestamp, event_message, metadata, toUInt64(9007199254740991 - rowNumberInAllBlocks()) AS big, toInt64(-4294967296) - toInt64(rowNumberInAllBlocks()) AS small\nFROM edge_logs WHERE project = @project ORDER BY timestamp',
    ),
  );
  // No JSON text given as objects: its NDJSON is the engine's own, passed through; values that differ
  // between writers (a slash, text that is not UTF-8, floats, arrays, maps, booleans).
  writeFileSync(
    join(queries, 'plain.sql'),
    QUERY('params:\n  project: { type: string, required: true }\nmax_rows: 100\n', "SELECT id, timestamp, event_message, concat('a/b ', unhex('C328'), ' \\u2028') AS odd, 1 / 3 AS third, toFloat32(0.1) AS f32, -0.0 AS zero, 1e21 AS huge, toUInt64(9007199254740991) AS big, [1, 2] AS arr, map('k', 'v') AS m, true AS yes, toDecimal64(1.50, 2) AS price, NULL AS nothing\nFROM edge_logs WHERE project = @project ORDER BY timestamp"),
  );
  // Many rows, and a query that fails after its first part is out.
  writeFileSync(join(queries, 'numbers.sql'), QUERY('params:\n  n: { type: integer, default: 1000 }\nmax_rows: 10\n', "SELECT number AS n, repeat('x', 100) AS pad FROM numbers(@n)"));
  // A million rows of the types a copy carries: many parts of the engine's answer.
  writeFileSync(join(queries, 'million.sql'), QUERY('params:\n  n: { type: integer, default: 1000000 }\nmax_rows: 10\n', "SELECT number AS n, toString(number * 7) AS s, toDateTime64(1700000000 + number, 6, 'UTC') AS t FROM numbers(@n)"));
  writeFileSync(join(queries, 'fails-late.sql'), QUERY('max_rows: 10\n', 'SELECT number AS n, throwIf(number = 300000, \'stopped half-way\') AS t FROM numbers(1000000)'));
  writeFileSync(join(queries, 'slow.sql'), QUERY('max_rows: 10\n', 'SELECT sum(number) AS s FROM numbers(100000000000)'));
  writeFileSync(join(dir, 'events.ndjson'), `${events()}\n`);
  const loaded = await cli(['load', 'edge_logs', join(dir, 'events.ndjson')], { env });
  expect(loaded.code, loaded.stderr).toBe(0);
  duck = await (await DuckDBInstance.create(':memory:')).connect();
}, LONG_TEST_MS);

const out = (name: string) => join(dir, name);

/** The NDJSON export's rows, as JSON reads them. */
function ndjsonRows(file: string): Record<string, unknown>[] {
  return readFileSync(file, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** An ISO instant with microseconds as microseconds since the epoch. */
function micros(iso: string): bigint {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?Z$/.exec(iso);
  if (!m) throw new Error(`not an ISO instant: ${iso}`);
  return BigInt(Date.parse(`${m[1]}Z`)) * 1000n + BigInt((m[2] ?? '').padEnd(6, '0'));
}

/** A UUID's 16 bytes (Arrow's FixedSizeBinary, as the engine writes one) as its text. */
function uuidOf(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

describe('savedq export', () => {
  it('writes every row past the row cap in each format, every value the NDJSON export has, read by DuckDB and Apache Arrow', async () => {
    const run = await cli(['run', 'every', '-p', 'project=p', '-f', 'json'], { env });
    expect((JSON.parse(run.stdout) as unknown[]).length).toBe(5);
    for (const format of ['ndjson', 'csv', 'parquet', 'arrow']) {
      const done = await cli(['export', 'every', '-p', 'project=p', '-f', format, '-o', out(`every.${format}`)], { env });
      expect(done.code, done.stderr).toBe(0);
      expect(existsSync(out(`every.${format}.partial`))).toBe(false);
    }
    const rows = ndjsonRows(out('every.ndjson'));
    expect(rows).toHaveLength(EVENTS);
    expect(rows[1]).toMatchObject({ event_message: 'line one\nline two', metadata: { request: { tags: ['a', 1] } }, big: 9007199254740990, small: -4294967297 });

    // Parquet, read by DuckDB: timestamps as timestamps to the microsecond, 64-bit integers, texts as texts.
    const parquet = await duck.runAndReadAll(`SELECT * FROM read_parquet('${out('every.parquet')}') ORDER BY timestamp`);
    expect(parquet.columnTypes().map(String)).toEqual(['UUID', 'TIMESTAMP WITH TIME ZONE', 'VARCHAR', 'VARCHAR', 'UBIGINT', 'BIGINT']);
    const fromParquet = parquet.getRowObjects();
    // The Arrow stream, read by Apache Arrow: the same types.
    const arrow = tableFromIPC(readFileSync(out('every.arrow')));
    expect(arrow.schema.fields.map((f) => `${f.name}:${String(f.type)}`)).toEqual(['id:FixedSizeBinary[16]', 'timestamp:Timestamp<MICROSECOND, UTC>', 'event_message:Utf8', 'metadata:Utf8', 'big:Uint64', 'small:Int64']);
    const arrowMicros = arrow.getChild('timestamp')?.data.flatMap((d) => [...(d.values as BigInt64Array)]) ?? [];
    // CSV, read by DuckDB's reader (RFC 4180: a value holding a line feed is one field).
    const csv = (await duck.runAndReadAll(`SELECT * FROM read_csv('${out('every.csv')}', header = true, all_varchar = true, quote = '"', escape = '"')`)).getRowObjects();
    expect(csv).toHaveLength(EVENTS);

    rows.forEach((row, i) => {
      const p = fromParquet[i] as Record<string, unknown>;
      const c = csv[i] as Record<string, unknown>;
      const values = { id: row.id, micros: micros(row.timestamp as string), message: row.event_message, metadata: row.metadata, big: BigInt(row.big as number), small: BigInt(row.small as number) };
      expect({ id: String(p.id), micros: (p.timestamp as { micros: bigint }).micros, message: p.event_message, metadata: JSON.parse(p.metadata as string) as unknown, big: p.big, small: p.small }).toEqual(values);
      const a = arrow.get(i)?.toJSON() as Record<string, unknown>;
      expect({ id: uuidOf(a.id as Uint8Array), micros: arrowMicros[i], message: a.event_message, metadata: JSON.parse(a.metadata as string) as unknown, big: a.big, small: a.small }).toEqual(values);
      // CSV keeps a formula-like text from a spreadsheet (a leading '), as run's CSV does.
      const message = (c.event_message as string).startsWith("''") ? (c.event_message as string).slice(1) : c.event_message;
      expect({ id: c.id, micros: micros(c.timestamp as string), message, metadata: JSON.parse(c.metadata as string) as unknown, big: BigInt(c.big as string), small: BigInt(c.small as string) }).toEqual(values);
    });
  }, LONG_TEST_MS);

  it('writes a million rows as one Parquet file and one Arrow stream, each read whole by DuckDB and Apache Arrow: the count and sum of the NDJSON export', async () => {
    for (const format of ['ndjson', 'parquet', 'arrow']) {
      const done = await cli(['export', 'million', '-f', format, '-o', out(`million.${format}`)], { env });
      expect(done.code, done.stderr).toBe(0);
    }
    const lines = readFileSync(out('million.ndjson'), 'utf8').trimEnd().split('\n');
    const fromNdjson = { count: lines.length, sum: lines.reduce((sum, line) => sum + BigInt((JSON.parse(line) as { n: number }).n), 0n) };
    expect(fromNdjson).toEqual({ count: 1_000_000, sum: 499_999_500_000n });
    // One file: Parquet's magic at its start and its end, and nowhere else.
    const parquetBytes = readFileSync(out('million.parquet'));
    expect(parquetBytes.toString('latin1').split('PAR1')).toHaveLength(3);
    const parquet = (await duck.runAndReadAll(`SELECT count(*) AS count, sum(n) AS sum, max(t) = TIMESTAMPTZ '2023-11-26 11:59:59+00' AS last FROM read_parquet('${out('million.parquet')}')`)).getRowObjects()[0];
    expect(parquet).toEqual({ count: BigInt(fromNdjson.count), sum: fromNdjson.sum, last: true });
    // One Arrow stream, read to its end by Apache Arrow: every batch, one schema.
    const arrow = tableFromIPC(readFileSync(out('million.arrow')));
    const ns = arrow.getChild('n');
    let arrowSum = 0n;
    for (const data of ns?.data ?? []) for (const value of data.values as BigUint64Array) arrowSum += value;
    expect({ count: arrow.numRows, sum: arrowSum }).toEqual(fromNdjson);
    // Serve's route gives the same file.
    const serve = await startServe({ ...env, SAVEDQ_API_KEYS: 'key' });
    try {
      for (const format of ['parquet', 'arrow']) {
        const answer = await fetch(`${serve.url}/api/endpoints/export/million?format=${format}`, { headers: { 'X-API-KEY': 'key' } });
        expect(answer.status).toBe(200);
        writeFileSync(out(`http-million.${format}`), Buffer.from(await answer.arrayBuffer()));
      }
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
    expect((await duck.runAndReadAll(`SELECT count(*) AS count, sum(n) AS sum FROM read_parquet('${out('http-million.parquet')}')`)).getRowObjects()[0]).toEqual({ count: 1_000_000n, sum: fromNdjson.sum });
    expect(tableFromIPC(readFileSync(out('http-million.arrow'))).numRows).toBe(1_000_000);
  }, LONG_TEST_MS);

  it('streams NDJSON and CSV as run writes them, and your own SQL over the answer through the same door', async () => {
    const exported = await cli(['export', 'every', '-p', 'project=p', '-f', 'csv'], { env });
    const ran = await cli(['run', 'every', '-p', 'project=p', '-f', 'csv'], { env });
    expect(exported.code, exported.stderr).toBe(0);
    // The first rows are the run's own, byte for byte (the run stops at its cap).
    expect(exported.stdout.startsWith(ran.stdout)).toBe(true);
    // A query that declares no fields: CSV's columns are its answer's.
    const [plainCsvRun, plainCsv] = await Promise.all([cli(['run', 'plain', '-p', 'project=p', '-f', 'csv'], { env }), cli(['export', 'plain', '-p', 'project=p', '-f', 'csv'], { env })]);
    expect(plainCsv.stdout.split('\r\n')[0]).toBe('id,timestamp,event_message,odd,third,f32,zero,huge,big,arr,m,yes,price,nothing');
    expect(plainCsv.stdout).toBe(plainCsvRun.stdout);
    // NDJSON passed through from the engine is byte for byte run's.
    const [plainRun, plainExport] = await Promise.all([cli(['run', 'plain', '-p', 'project=p', '-f', 'ndjson'], { env }), cli(['export', 'plain', '-p', 'project=p'], { env })]);
    expect(plainRun.stdout.split('\n')).toHaveLength(EVENTS + 1);
    // The same values; two floats are spelled as the engine spells them (a zero keeps its sign: -0;
    // 1e21, where JSON.stringify writes 1e+21), the rest byte for byte.
    const spelled = (text: string) => text.replace(/"zero":-?0,"huge":1e\+?21,/g, '');
    expect(spelled(plainExport.stdout)).toBe(spelled(plainRun.stdout));
    expect(plainExport.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line, (_, v: unknown) => (Object.is(v, -0) ? 0 : v)) as unknown)).toEqual(plainRun.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as unknown));
    const sql = await cli(['export', 'every', '-p', 'project=p', '--sql', 'SELECT count() AS n, max(big) AS top FROM result'], { env });
    expect(sql.code, sql.stderr).toBe(0);
    expect(sql.stdout).toBe('{"n":40,"top":9007199254740991}\n');
    // The same checks as a run: a parameter missing, SQL the sandbox refuses, a format unknown.
    const missing = await cli(['export', 'every'], { env });
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringMatching(/project/)]);
    const refused = await cli(['export', 'every', '-p', 'project=p', '--sql', "SELECT * FROM file('/etc/passwd')"], { env });
    expect(refused.code).toBe(2);
    const unknown = await cli(['export', 'every', '-p', 'project=p', '-f', 'xlsx'], { env });
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringMatching(/ndjson, csv, parquet, arrow/)]);
    expect(unknown.stderr).not.toMatch(/\n\s+at /);
  }, LONG_TEST_MS);

  it('reaches a pipe that closes early (| head -n 1) quietly, and stops the query', async () => {
    const head = await runProgram('bash', ['-c', `set -o pipefail; node ${JSON.stringify(join(import.meta.dirname, '../../bin/savedq.js'))} export numbers -p n=100000000 | head -n 1; echo "exit \${PIPESTATUS[0]}"`], { env: { ...process.env, ...env }, timeoutMs: EVENT_DEADLINE_MS });
    expect(head.stdout).toMatch(/^\{"n":0,"pad":"x{100}"\}\nexit (0|141)\n$/);
    expect(head.stderr).toBe('');
  }, LONG_TEST_MS);

  it('leaves no file when the query fails after its first part, and says why', async () => {
    const failed = await cli(['export', 'fails-late', '-o', out('late.ndjson')], { env });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/stopped half-way/);
    expect(failed.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(out('late.ndjson'))).toBe(false);
    expect(existsSync(out('late.ndjson.partial'))).toBe(false);
    // A bad call is said before any file is made; a folder that is not there, before the query runs.
    const missing = await cli(['export', 'every', '-o', out('missing.ndjson')], { env });
    expect([missing.code, missing.stderr]).toEqual([2, "savedq: missing parameter 'project' for every: a non-empty string.\n"]);
    expect(existsSync(out('missing.ndjson.partial'))).toBe(false);
    const nowhere = await cli(['export', 'every', '-p', 'project=p', '-o', out('no/such/x.ndjson')], { env });
    expect([nowhere.code, nowhere.stderr]).toEqual([2, `savedq: cannot write ${out('no/such/x.ndjson.partial')}: there is no folder ${out('no/such')}.\n`]);
    // A folder that is there but makes no files.
    const proc = await cli(['export', 'every', '-p', 'project=p', '-o', '/proc/x.ndjson'], { env });
    expect([proc.code, proc.stderr]).toEqual([2, 'savedq: cannot write /proc/x.ndjson.partial: no file can be made in /proc.\n']);
  }, LONG_TEST_MS);

  it('stops at its time limit, and on Ctrl-C (SIGINT) with no file left, partial or whole', async () => {
    const timedOut = await cli(['--timeout', '1', 'export', 'slow', '-o', out('slow.ndjson')], { env });
    expect(timedOut.code).toBe(1);
    expect(timedOut.stderr).toMatch(/time limit of 1 s/);
    expect(existsSync(out('slow.ndjson.partial'))).toBe(false);
    const running = startCli(['export', 'numbers', '-p', 'n=1000000000', '-o', out('many.ndjson')], { env });
    // Interrupted once bytes are being written.
    await eventually('the export to write its first bytes', () => existsSync(out('many.ndjson.partial')) && statSync(out('many.ndjson.partial')).size > 0);
    running.child.kill('SIGINT');
    const { code, stderr } = await running.done;
    expect(code, stderr).toBe(130);
    expect(existsSync(out('many.ndjson.partial'))).toBe(false);
    expect(existsSync(out('many.ndjson'))).toBe(false);
    // A binary format, which the engine writes whole itself (beside -o's file, then over it; to a file of
    // its data directory, then read, for standard output): stopped while the engine writes it (a billion
    // rows would take minutes), and nothing of it left anywhere.
    const staging = join(env.SAVEDQ_DATA_DIR, 'savedq-export');
    const slowParquet = await cli(['--timeout', '1', 'export', 'slow', '-f', 'parquet', '-o', out('slow.parquet')], { env });
    expect([slowParquet.code, slowParquet.stderr]).toEqual([1, expect.stringMatching(/time limit of 1 s/)]);
    const made = (folder: string, start: string) => (existsSync(folder) ? readdirSync(folder).filter((name) => name.startsWith(start)) : []);
    const toFile = startCli(['export', 'numbers', '-p', 'n=1000000000', '-f', 'arrow', '-o', out('many.arrow')], { env });
    await eventually('the engine to write the Arrow stream', () => made(dir, 'many.arrow.partial.').some((name) => statSync(join(dir, name)).size > 0));
    toFile.child.kill('SIGINT');
    const stopped = await toFile.done;
    expect(stopped.code, stopped.stderr).toBe(130);
    const toPipe = startCli(['export', 'numbers', '-p', 'n=1000000000', '-f', 'parquet'], { env });
    await eventually('the engine to write the Parquet file', () => made(staging, '').some((name) => statSync(join(staging, name)).size > 0));
    toPipe.child.kill('SIGTERM');
    expect((await toPipe.done).code).toBe(130);
    expect([made(dir, 'many.arrow'), made(dir, 'slow.parquet'), made(staging, '')]).toEqual([[], [], []]);
  }, LONG_TEST_MS);

  it.runIf(has.gnuTime)('keeps its memory flat: four times the rows (a million of over 100 bytes) in the same memory, within a fifth, in each format', async () => {
    /** The peak resident memory, in kB, of an export of `n` rows to a file (GNU time's %M). */
    const peak = async (n: number, format: string) => {
      const measured = await runProgram('/usr/bin/time', ['-f', 'peak %M', process.execPath, join(import.meta.dirname, '../../bin/savedq.js'), 'export', 'numbers', '-p', `n=${n}`, '-f', format, '-o', out(`n${n}.${format}`)], { env: { ...process.env, ...env }, timeoutMs: LONG_TEST_MS });
      expect(measured.code, measured.stderr).toBe(0);
      return Number(/peak (\d+)/.exec(measured.stderr)?.[1]);
    };
    for (const format of ['ndjson', 'parquet', 'arrow']) {
      const quarter = await peak(250_000, format);
      const million = await peak(1_000_000, format);
      const bytes = statSync(out(`n1000000.${format}`)).size;
      // Within a fifth (the contract's flat): held whole, the answer (over 100 MB, twice over: the engine's
      // and Node's copy; Parquet's a million rows in one group) would be more than a fifth of the 300-odd MB
      // the engine and Node start with.
      expect(million, format).toBeLessThan(quarter * 1.2);
      if (format !== 'parquet') expect(bytes / 1024).toBeGreaterThan(quarter * 0.2);
    }
  }, LONG_TEST_MS);

  it.runIf(has.root)('says a full disk as such, in each format, and leaves nothing there: -o on a small disk, and a data directory on one', async () => {
    // Small tmpfs disks stand in for full ones; mounting them needs root (as on CI).
    const small = out('small-disk');
    const smallData = out('small-data');
    mkdirSync(small, { recursive: true });
    mkdirSync(smallData, { recursive: true });
    const mounted = [spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', small], { encoding: 'utf8' }), spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', smallData], { encoding: 'utf8' })];
    try {
      expect(mounted.map((m) => [m.status, m.stderr])).toEqual([[0, ''], [0, '']]);
      for (const format of ['ndjson', 'csv', 'parquet', 'arrow']) {
        const file = join(small, `full.${format}`);
        const full = await cli(['export', 'numbers', '-p', 'n=100000', '-f', format, '-o', file], { env });
        expect([full.code, full.stderr]).toEqual([1, `savedq: cannot write ${file}.partial: no space left on the device.\n`]);
        expect(readdirSync(small)).toEqual([]);
      }
      // The engine writes a binary export for standard output into the data directory first.
      const data = { ...env, SAVEDQ_DATA_DIR: join(smallData, 'data') };
      const piped = await runProgram('bash', ['-c', `set -o pipefail; ${savedqCommandLine(['export', 'numbers', '-p', 'n=1000000', '-f', 'arrow'])} | wc -c`], { env: { ...process.env, ...data }, timeoutMs: LONG_TEST_MS });
      expect([piped.code, piped.stderr]).toEqual([1, `savedq: cannot write the export into ${join(smallData, 'data', 'savedq-export')}: no space left on the device.\n`]);
      expect(readdirSync(join(smallData, 'data', 'savedq-export'))).toEqual([]);
      // A data directory that holds only what exports made there is still known for one.
      const after = await cli(['export', 'numbers', '-p', 'n=3', '-f', 'csv'], { env: data });
      expect([after.code, after.stdout]).toEqual([0, expect.stringMatching(/^n,pad\r\n0,/)]);
    } finally {
      spawnSync('umount', [small]);
      spawnSync('umount', [smallData]);
    }
  }, LONG_TEST_MS);

  it.runIf(has.script)('refuses a binary format to a terminal, and shows a file’s progress and what it wrote there', async () => {
    const refused = await inTerminal(['export', 'every', '-p', 'project=p', '-f', 'parquet'], { env });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/parquet is a binary format: give -o FILE or redirect standard output/);
    const written = await inTerminal(['export', 'every', '-p', 'project=p', '-f', 'parquet', '-o', out('tty.parquet')], { env });
    expect(written.code, written.stdout).toBe(0);
    expect(written.stdout).toMatch(/wrote tty\.parquet: 40 rows, [\d.]+ kB \(parquet\) in [\d.]+ s/);
  }, LONG_TEST_MS);
});

describe("serve's export route", () => {
  it('streams each format chunked, by format= or Accept, with a file name; counts exports and rows; OpenAPI declares it', async () => {
    const serve = await startServe({ ...env, SAVEDQ_API_KEYS: 'key' });
    const headers = { 'X-API-KEY': 'key' };
    const csv = await fetch(`${serve.url}/api/endpoints/export/every?project=p&format=csv`, { headers });
    expect(csv.status).toBe(200);
    expect([csv.headers.get('transfer-encoding'), csv.headers.get('content-type'), csv.headers.get('content-disposition')]).toEqual(['chunked', 'text/csv; charset=utf-8', 'attachment; filename="every.csv"']);
    // A command's export while serve holds the data directory streams through serve's engine (its socket).
    const local = await cli(['export', 'every', '-p', 'project=p', '-f', 'csv'], { env });
    expect(await csv.text()).toBe(local.stdout);
    const viaSocket = await cli(['export', 'every', '-p', 'project=p', '-f', 'parquet', '-o', out('socket.parquet')], { env });
    expect(viaSocket.code, viaSocket.stderr).toBe(0);
    expect((await duck.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${out('socket.parquet')}')`)).getRowObjectsJson()).toEqual([{ n: String(EVENTS) }]);
    const parquet = await fetch(`${serve.url}/api/endpoints/export/every?project=p`, { headers: { ...headers, Accept: 'application/vnd.apache.parquet' } });
    expect(parquet.headers.get('content-type')).toBe('application/vnd.apache.parquet');
    writeFileSync(out('http.parquet'), Buffer.from(await parquet.arrayBuffer()));
    const counted = await duck.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${out('http.parquet')}')`);
    expect(counted.getRowObjectsJson()).toEqual([{ n: String(EVENTS) }]);
    const posted = await fetch(`${serve.url}/api/endpoints/export/every?format=ndjson`, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify({ params: { project: 'p' }, sql: 'SELECT count() AS n FROM result' }) });
    expect(await posted.text()).toBe('{"n":40}\n');
    const bad = await fetch(`${serve.url}/api/endpoints/export/every?project=p&format=xlsx`, { headers });
    expect(bad.status).toBe(400);
    const metrics = await (await fetch(`${serve.url}/metrics`, { headers })).text();
    expect(metrics).toMatch(/savedq_exports_total\{query="every",format="csv",outcome="whole"\} 1/);
    expect(metrics).toMatch(/savedq_export_rows_total\{query="every",format="parquet"\} 40/);
    const doc = (await (await fetch(`${serve.url}/openapi.json`)).json()) as { paths: Record<string, { get: { responses: { 200: { content: object } } } }> };
    expect(Object.keys(doc.paths['/api/endpoints/export/every']?.get.responses[200].content ?? {})).toEqual(['application/x-ndjson', 'text/csv', 'application/vnd.apache.parquet', 'application/vnd.apache.arrow.stream']);
    serve.child.kill('SIGTERM');
    await serve.exited;
  }, LONG_TEST_MS);

  it('lets a token export only when made with --export; past --max-exports answers 503 with Retry-After; a caller gone stops its query', async () => {
    const secrets = join(dir, 'secrets');
    writeFileSync(secrets, 'a-token-secret-of-at-least-32-bytes-long\n', { mode: 0o600 });
    const make = async (...extra: string[]) => (await cli(['token', 'create', '--token-secret-file', secrets, '--name', 't', '--query', 'every', '--query', 'numbers', ...extra], { env })).stdout.trim();
    const [plain, exporter] = [await make(), await make('--export')];
    const serve = await startServe({ ...env, SAVEDQ_API_KEYS: 'key', SAVEDQ_TOKEN_SECRETS: 'a-token-secret-of-at-least-32-bytes-long' }, [], ['--max-exports', '1']);
    const refused = await fetch(`${serve.url}/api/endpoints/export/every?project=p`, { headers: { Authorization: `Bearer ${plain}` } });
    expect([refused.status, await refused.json()]).toEqual([403, { error: { code: 'forbidden', message: 'this token may not export (it was made without --export).' } }]);
    const allowed = await fetch(`${serve.url}/api/endpoints/export/every?project=p`, { headers: { Authorization: `Bearer ${exporter}` } });
    expect([allowed.status, (await allowed.text()).split('\n').length]).toEqual([200, EVENTS + 1]);
    // One export under way (a billion rows: it would take minutes), read a little.
    const gone = new AbortController();
    const long = await fetch(`${serve.url}/api/endpoints/export/numbers?n=1000000000`, { headers: { 'X-API-KEY': 'key' }, signal: gone.signal });
    const reader = (long.body as ReadableStream<Uint8Array>).getReader();
    expect((await reader.read()).done).toBe(false);
    const busy = await fetch(`${serve.url}/api/endpoints/export/every?project=p`, { headers: { 'X-API-KEY': 'key' } });
    expect([busy.status, busy.headers.get('retry-after'), ((await busy.json()) as { error: { code: string } }).error.code]).toEqual([503, '1', 'overloaded']);
    gone.abort();
    // The caller gone: its export stopped (counted so), and the next one is taken.
    await eventually('the export to be stopped', async () => /savedq_exports_total\{query="numbers",format="ndjson",outcome="stopped"\} 1/.test(await (await fetch(`${serve.url}/metrics`, { headers: { 'X-API-KEY': 'key' } })).text()));
    const next = await fetch(`${serve.url}/api/endpoints/export/every?project=p`, { headers: { 'X-API-KEY': 'key' } });
    expect(next.status).toBe(200);
    await next.text();
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  }, LONG_TEST_MS);

  it('cuts the stream when the query fails after the first byte: the client sees it cut, never a short answer as whole', async () => {
    const serve = await startServe({ ...env, SAVEDQ_API_KEYS: 'key' });
    const answer = await fetch(`${serve.url}/api/endpoints/export/fails-late`, { headers: { 'X-API-KEY': 'key' } });
    expect(answer.status).toBe(200);
    await expect(answer.text()).rejects.toThrow(/terminated/);
    await serve.waitFor(/export of fails-late cut after \d+ bytes: .*stopped half-way/);
    serve.child.kill('SIGTERM');
    await serve.exited;
  }, LONG_TEST_MS);
});

describe('an export from a server warehouse', () => {
  let host: Standin;
  beforeAll(async () => {
    host = await startStandin(join(dir, 'host'));
  }, LONG_TEST_MS);
  afterAll(async () => {
    await host.stop();
  });
  const serverEnv = () => ({ ...env, SAVEDQ_CLICKHOUSE_URL: host.url, SAVEDQ_CACHE_FILE: join(dir, 'server-cache.sqlite') });

  it('streams the host’s answer in each format, and a host reset half-way is a cut stream and no file', async () => {
    const ndjson = await cli(['export', 'numbers', '-p', 'n=200000', '-o', out('host.ndjson')], { env: serverEnv() });
    expect(ndjson.code, ndjson.stderr).toBe(0);
    expect(readFileSync(out('host.ndjson'), 'utf8').split('\n')).toHaveLength(200_001);
    const parquet = await cli(['export', 'numbers', '-p', 'n=200000', '-f', 'parquet', '-o', out('host.parquet')], { env: serverEnv() });
    expect(parquet.code, parquet.stderr).toBe(0);
    expect((await duck.runAndReadAll(`SELECT count(*) AS n, sum(n) AS s FROM read_parquet('${out('host.parquet')}')`)).getRowObjectsJson()).toEqual([{ n: '200000', s: '19999900000' }]);
    // The host sends half its answer, then resets the connection.
    await host.fault('reset');
    const cut = await cli(['export', 'numbers', '-p', 'n=200000', '-o', out('reset.ndjson')], { env: serverEnv() });
    expect(cut.code).toBe(1);
    // The host was reached: its answer was cut off half-way (not 'cannot reach').
    expect(cut.stderr).toMatch(/^savedq: the answer of ClickHouse at http:\/\/127\.0\.0\.1:\d+ was cut off half-way: connection reset\.\n$/);
    expect(existsSync(out('reset.ndjson'))).toBe(false);
    expect(existsSync(out('reset.ndjson.partial'))).toBe(false);
    const serve = await startServe({ ...serverEnv(), SAVEDQ_API_KEYS: 'key' });
    const answer = await fetch(`${serve.url}/api/endpoints/export/numbers?n=200000`, { headers: { 'X-API-KEY': 'key' } });
    expect(answer.status).toBe(200);
    await expect(answer.text()).rejects.toThrow(/terminated/);
    serve.child.kill('SIGTERM');
    await serve.exited;
    // An error the host writes at the end of a 200 answer, plainly or tagged (ClickHouse 25.11): the
    // engine's error, never rows.
    for (const fault of ['exception', 'exception-tagged'] as const) {
      await host.fault(fault);
      const failed = await cli(['export', 'numbers', '-p', 'n=200000', '-o', out(`${fault}.ndjson`)], { env: serverEnv() });
      expect([failed.code, failed.stderr]).toEqual([1, expect.stringMatching(/Memory limit/)]);
      expect(existsSync(out(`${fault}.ndjson`))).toBe(false);
    }
    await host.fault('none');
  }, LONG_TEST_MS);
});
