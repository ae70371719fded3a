import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { binPath, cli, eventually, EVENT_DEADLINE_MS, inTerminal, NO_CONFIG, savedqCommandLine, startServe, tempDir } from '../helpers.js';
import { has } from '../system.js';

// Values that hold what ends a line, a field or a terminal's patience, written by every format and read
// back by readers savedq did not write: Python's csv module and jq.
const dir = tempDir();
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'c.sqlite') };
const project = 'values-p';

/** Event messages, each holding one character a format must carry whole (bytes: invalid UTF-8 too). */
const MESSAGES: Record<string, Buffer> = {
  lf: Buffer.from('line1\nline2'),
  cr: Buffer.from('carriage\rreturn'),
  crlf: Buffer.from('both\r\nends'),
  tab: Buffer.from('a\ttab'),
  quote: Buffer.from('a "quoted" word'),
  comma: Buffer.from('one,two'),
  backslash: Buffer.from('back\\slash \\n not a line feed'),
  nul: Buffer.from('nul\u0000inside'),
  invalid: Buffer.concat([Buffer.from('bytes '), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(' end')]),
  escape: Buffer.from('\u001b]0;pwned\u0007\u001b[31mred\u001b[0m \u009b1m csi'),
};

/** The events as NDJSON lines, a message's bytes written raw inside its JSON string (escaped only where JSON must). */
function ndjson(): Buffer {
  const lines = Object.entries(MESSAGES).map(([name, bytes], i) => {
    // eslint-disable-next-line no-control-regex
    const text = bytes.toString('latin1').replace(/[\u0000-\u001f"\\]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const head = Buffer.from(`{"timestamp":"${new Date(Date.now() - (i + 1) * 1000).toISOString()}","project":"${project}","metadata":{"name":"${name}"},"event_message":"`);
    return Buffer.concat([head, Buffer.from(text, 'latin1'), Buffer.from('"}\n')]);
  });
  return Buffer.concat(lines);
}

/** savedq's standard output into a reader in a pipe: what the reader printed. */
function through(args: readonly string[], reader: string, more: Record<string, string> = {}): string {
  const r = spawnSync('bash', ['-o', 'pipefail', '-c', `${savedqCommandLine(args)} | ${reader}`], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env, ...more },
    encoding: 'utf8',
    timeout: EVENT_DEADLINE_MS,
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

const logs = ['run', 'logs.all', '-p', `project=${project}`];

beforeAll(async () => {
  const file = join(dir, 'events.ndjson');
  writeFileSync(file, ndjson());
  const r = await cli(['load', 'edge_logs', file], { env });
  expect(r.code, r.stderr).toBe(0);
});

describe('values that hold line ends, quotes, NUL and bytes that are not UTF-8', () => {
  it.runIf(has.tutorialTools)('are whole in JSON and NDJSON, read by jq: one value a message, the same in both', () => {
    const fromJson = JSON.parse(through([...logs, '-f', 'json'], "jq -c '[.[] | {name: .metadata.name, m: .event_message}] | sort_by(.name)'")) as { name: string; m: string }[];
    const fromNdjson = JSON.parse(through([...logs, '-f', 'ndjson'], "jq -cs '[.[] | {name: .metadata.name, m: .event_message}] | sort_by(.name)'")) as { name: string; m: string }[];
    expect(fromJson).toEqual(fromNdjson);
    expect(fromJson).toHaveLength(Object.keys(MESSAGES).length);
    for (const { name, m } of fromJson) {
      // Text that is UTF-8 comes back as it went in; bytes that are not, as U+FFFD (JSON holds text).
      if (name === 'invalid') expect(m).toMatch(/^bytes \ufffd+ end$/);
      else expect(m, name).toBe((MESSAGES[name] as Buffer).toString('utf8'));
    }
  });

  it.runIf(has.python3)("are one record a row in CSV, read by Python's csv module: every field the value JSON gives", () => {
    const read = `python3 -c 'import csv, json, sys; rows = list(csv.reader(sys.stdin)); print(json.dumps(rows))'`;
    const rows = JSON.parse(through([...logs, '-f', 'csv', '--csv-raw'], read)) as string[][];
    const header = rows[0] as string[];
    expect(header).toEqual(['id', 'timestamp', 'event_message', 'metadata']);
    expect(rows).toHaveLength(1 + Object.keys(MESSAGES).length);
    const json = JSON.parse(through([...logs, '-f', 'json'], 'cat')) as { event_message: string; metadata: { name: string } }[];
    for (const [i, row] of rows.slice(1).entries()) {
      expect(row, `row ${i}`).toHaveLength(4);
      expect(row[2], String(json[i]?.metadata.name)).toBe(json[i]?.event_message);
      expect(JSON.parse(row[3] as string)).toEqual(json[i]?.metadata);
    }
    // Without --csv-raw, only a cell a spreadsheet would run changes: none of these starts like a formula.
    expect(JSON.parse(through([...logs, '-f', 'csv'], read))).toEqual(rows);
  });
});

describe.runIf(has.script)('control characters of a value on a terminal', () => {
  const shown = async (format: string) => {
    const r = await inTerminal([...logs, '-f', format], { env: { HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env } });
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  };

  it('are shown as escapes in CSV, JSON and NDJSON, as in tables: nothing retitles the terminal or colours it', async () => {
    for (const format of ['csv', 'json', 'ndjson', 'table']) {
      // A table's own colour aside, no ESC, BEL, CSI or NUL reaches the terminal from the data.
      // eslint-disable-next-line no-control-regex
      const text = (await shown(format)).replace(/\u001b\[[\d;]*m/g, '');
      // eslint-disable-next-line no-control-regex
      expect(text, format).not.toMatch(/[\u0000\u0007\u001b\u009b]/);
      expect(text, format).toMatch(format === 'csv' || format === 'table' ? /\\x1b\]0;pwned\\x07/ : /\\u001b\]0;pwned\\u0007/);
    }
    // A record a line: the line feed inside a message is shown, not obeyed.
    expect(await shown('csv')).toContain('line1\\nline2');
  });

  it('reach a pipe as the values are: the terminal is the only reader escapes are for', () => {
    const csv = through([...logs, '-f', 'csv'], 'cat');
    expect(csv).toContain('\u001b]0;pwned\u0007');
    expect(through([...logs, '-f', 'ndjson'], 'cat')).toContain('\\u001b]0;pwned\\u0007\\u001b[31mred\\u001b[0m \u009b1m');
  });
});

describe('64-bit integers past 2^53: every digit the engine holds, in every format and surface', () => {
  const queries = join(dir, 'wide-queries');
  const wideEnv = { ...env, SAVEDQ_QUERIES: queries };
  const BIG = '9007199254740993';
  const NEG = '-9223372036854775807';
  const TOP = '18446744073709551615';
  const call = ['big.ints', '-p', 'project=wide'];

  beforeAll(async () => {
    mkdirSync(queries, { recursive: true });
    writeFileSync(
      join(queries, 'big.ints.sql'),
      `/*\ndescription: integers a double cannot hold.\nparams:\n  project: { type: string, required: true }\nfields:\n  big: { type: integer }\n  neg: { type: integer }\n  top: { type: array }\n  metadata: { type: object }\ncache: 900\n*/\nSELECT JSONExtractUInt(metadata, 'big') AS big, JSONExtractInt(metadata, 'neg') AS neg, [toUInt64(${TOP}), 1] AS top, metadata\nFROM edge_logs WHERE project = @project\n`,
    );
    // The same values expected by a test of the query: YAML's integers, read as the engine's are.
    writeFileSync(join(queries, 'big.ints.test.yaml'), `at: 2026-11-20T12:00:00Z\nfixtures:\n  edge_logs:\n    - { timestamp: 2026-11-20T11:00:00Z, project: wide, metadata: { big: ${BIG}, neg: ${NEG} } }\ncases:\n  - name: keeps every digit\n    params: { project: wide }\n    rows:\n      - { big: ${BIG}, neg: ${NEG}, top: [${TOP}, 1], metadata: { big: ${BIG}, neg: ${NEG} } }\n`);
    const file = join(dir, 'wide.ndjson');
    writeFileSync(file, `{"timestamp":"${new Date().toISOString()}","project":"wide","event_message":"m","metadata":{"big":${BIG},"neg":${NEG}}}\n`);
    const r = await cli(['load', 'edge_logs', file], { env: wideEnv });
    expect(r.code, r.stderr).toBe(0);
  });

  /** What Python's json (integers of any size) reads of a JSON text: its integers as digits. */
  const digitsOf = (text: string): unknown =>
    JSON.parse(spawnSync('python3', ['-c', 'import json, sys\ndef big(v):\n  if isinstance(v, bool): return v\n  if isinstance(v, int) and abs(v) > 2**53: return str(v)\n  if isinstance(v, list): return [big(x) for x in v]\n  if isinstance(v, dict): return {k: big(x) for k, x in v.items()}\n  return v\nprint(json.dumps(big(json.loads(sys.stdin.read()))))'], { input: text, encoding: 'utf8' }).stdout);
  const expected = { big: BIG, neg: NEG, top: [TOP, 1], metadata: { big: BIG, neg: NEG } };

  it.runIf(has.python3)('run prints them in JSON, NDJSON, CSV and a table, computed and from the cache; export in NDJSON and CSV', async () => {
    for (const pass of ['computed', 'cached']) {
      const json = await cli(['run', ...call, '-f', 'json', '--stats'], { env: wideEnv });
      expect(json.stderr, pass).toMatch(pass === 'cached' ? /cached/ : /computed now/);
      expect(digitsOf(json.stdout)).toEqual([expected]);
      expect(digitsOf((await cli(['run', ...call, '-f', 'ndjson'], { env: wideEnv })).stdout)).toEqual(expected);
    }
    expect(digitsOf((await cli(['export', ...call], { env: wideEnv })).stdout)).toEqual(expected);
    const read = `python3 -c 'import csv, json, sys; print(json.dumps(list(csv.reader(sys.stdin))))'`;
    for (const command of ['run', 'export']) {
      const rows = JSON.parse(through([command, ...call, '-f', 'csv'], read, wideEnv)) as string[][];
      expect(rows.map((r) => r.slice(0, 3)), command).toEqual([['big', 'neg', 'top'], [BIG, NEG, `[${TOP},1]`]]);
    }
    const table = await cli(['run', ...call, '-f', 'table'], { env: { ...wideEnv, COLUMNS: '200' } });
    expect(table.stdout).toContain(`${BIG} │ ${NEG}`);
  });

  it.runIf(has.python3)('serve answers them, and a command through serve’s engine gets them whole', async () => {
    const serve = await startServe({ ...wideEnv, SAVEDQ_API_KEYS: 'key' });
    try {
      const answer = await fetch(`${serve.url}/api/endpoints/query/big.ints?project=wide`, { headers: { 'X-API-KEY': 'key' } });
      expect(answer.status).toBe(200);
      expect((digitsOf(await answer.text()) as { result: unknown[] }).result).toEqual([expected]);
      const viaSocket = await cli(['run', ...call, '-f', 'ndjson', '--no-cache'], { env: wideEnv });
      expect(digitsOf(viaSocket.stdout)).toEqual(expected);
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
  });

  it.runIf(has.python3)('an MCP tool call gives them in its text, and in its structured result as far as the SDK can write them', async () => {
    const mcp = spawn(process.execPath, [binPath, 'mcp'], { env: { ...process.env, ...wideEnv, XDG_CONFIG_HOME: NO_CONFIG } });
    const lines: string[] = [];
    let buffered = '';
    mcp.stdout.on('data', (d: Buffer) => {
      buffered += d.toString();
      for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
        lines.push(buffered.slice(0, at));
        buffered = buffered.slice(at + 1);
      }
    });
    const send = (message: object) => mcp.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
    send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '0' } } });
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/call', params: { name: 'big_ints', arguments: { project: 'wide' } } });
    const line = await eventually('the tool call to be answered', () => lines.find((l) => l.includes('"id":2')));
    mcp.stdin.end();
    const reply = digitsOf(line) as { result: { structuredContent: { rows: unknown[] }; content: { text: string }[] } };
    expect((digitsOf(reply.result.content[0]?.text ?? '') as { rows: unknown[] }).rows).toEqual([expected]);
    // Raw numbers where Node has JSON.rawJSON (22 and later); texts of every digit on Node 20.
    expect(reply.result.structuredContent.rows).toEqual([expected]);
    if (typeof (JSON as { rawJSON?: unknown }).rawJSON === 'function') expect(line).toContain(`"rows":[{"big":${BIG},"neg":${NEG}`);
    else expect(line).toContain(`"rows":[{"big":"${BIG}","neg":"${NEG}"`);
  });

  it('savedq test compares them by every digit: the expected rows pass, one digit off fails', async () => {
    const passed = await cli(['test', 'big.ints'], { env: wideEnv });
    expect(passed.code, passed.stdout + passed.stderr).toBe(0);
    const wrong = join(dir, 'wide-wrong');
    mkdirSync(wrong, { recursive: true });
    copyFileSync(join(queries, 'big.ints.sql'), join(wrong, 'big.ints.sql'));
    writeFileSync(join(wrong, 'big.ints.test.yaml'), readFileSync(join(queries, 'big.ints.test.yaml'), 'utf8').replace(`rows:\n      - { big: ${BIG}`, `rows:\n      - { big: 9007199254740992`));
    const failed = await cli(['test', 'big.ints', '--queries', wrong], { env: { ...env, SAVEDQ_QUERIES: '' } });
    expect([failed.code, failed.stdout]).toEqual([1, expect.stringContaining(`field big: expected 9007199254740992, got ${BIG}`)]);
  });
});
