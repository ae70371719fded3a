import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, EVENT_DEADLINE_MS, inTerminal, NO_CONFIG, savedqCommandLine, tempDir } from '../helpers.js';
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
function through(args: readonly string[], reader: string): string {
  const r = spawnSync('bash', ['-o', 'pipefail', '-c', `${savedqCommandLine(args)} | ${reader}`], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env },
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
