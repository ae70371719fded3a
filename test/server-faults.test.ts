import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../src/http/server.js';
import { cli, eventually, tempDir, logInto, libraryOf, LONG_TEST_MS , serveOptions } from './helpers.js';
import { has } from './system.js';

// A real ClickHouse server, Debian's clickhouse-server (18.16, installed by .ci/run): too old to run
// savedq's SQL, but its HTTP interface, its authentication errors and its connection behaviour are real.
const SERVER = '/usr/sbin/clickhouse-server'; // test/system.ts checks it is there
const PASSWORD = 'pw-s3cret-value';
const dir = tempDir('savedq-chs-');
let server: ChildProcess;
let port = 0;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port: p } = s.address() as { port: number };
      s.close(() => resolve(p));
    });
  });
}

/**
 * Starts clickhouse-server on two free ports. A port found free may be taken by another test file's
 * server before clickhouse-server binds it: then it exits, and is started again on two others (its
 * errors, on standard error, say why when it cannot start at all).
 */
async function startClickHouse(): Promise<void> {
  const said: string[] = [];
  mkdirSync(join(dir, 'data'), { recursive: true });
  writeFileSync(
    join(dir, 'users.xml'),
    `<?xml version="1.0"?><yandex><profiles><default></default></profiles><quotas><default></default></quotas>
<users><tester><password>${PASSWORD}</password><networks><ip>::/0</ip></networks><profile>default</profile><quota>default</quota></tester></users></yandex>`,
  );
  // Only the ports change from one try to the next.
  for (let attempt = 1; attempt <= 3; attempt++) {
    port = await freePort();
    const tcp = await freePort();
    writeFileSync(
      join(dir, 'config.xml'),
      `<?xml version="1.0"?><yandex><logger><level>error</level><console>1</console></logger>
<listen_host>127.0.0.1</listen_host><http_port>${port}</http_port><tcp_port>${tcp}</tcp_port>
<path>${dir}/data/</path><tmp_path>${dir}/tmp/</tmp_path><users_config>${dir}/users.xml</users_config>
<default_profile>default</default_profile><default_database>default</default_database><mark_cache_size>5368709</mark_cache_size></yandex>`,
    );
    const child = spawn(SERVER, [`--config-file=${join(dir, 'config.xml')}`], { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir });
    child.stderr?.setEncoding('utf8').on('data', (text: string) => said.push(text));
    let exited = false;
    child.once('exit', () => (exited = true));
    const up = await eventually('clickhouse-server to answer /ping or exit', (): Promise<'up' | 'exited' | false> | 'exited' =>
      exited ? 'exited' : fetch(`http://127.0.0.1:${port}/ping`).then((r) => (r.ok ? 'up' : false), () => false),
    ).catch((err: unknown) => {
      child.kill('SIGKILL'); // neither answering nor gone: not left running after the suite
      throw new Error(`${String(err)}: ${said.join('').slice(-2000)}`);
    });
    if (up === 'up') {
      server = child;
      return;
    }
  }
  throw new Error(`clickhouse-server did not start, three times: ${said.join('').slice(-2000)}`);
}

const url = (user = 'tester', password = PASSWORD) => `http://${user}:${password}@127.0.0.1:${port}`;
const env = { SAVEDQ_DATA_DIR: join(dir, 'unused'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite') };

describe.runIf(has.clickhouseServer)("Debian's clickhouse-server", () => {
  beforeAll(async () => {
    await startClickHouse();
  }, LONG_TEST_MS);
  afterAll(() => {
    server?.kill('SIGCONT');
    server?.kill('SIGKILL');
  });

  describe('against a real ClickHouse server', () => {
    it('wrong credentials: exit 1, one line naming the server, never the password', async () => {
      for (const target of [url('tester', 'wrong-password'), url('nobody', 'whatever')]) {
        const r = await cli(['run', 'logs.all', '-p', 'project=x'], { env: { ...env, SAVEDQ_CLICKHOUSE_URL: target } });
        expect(r.code).toBe(1);
        expect(r.stdout).toBe('');
        expect(r.stderr).toMatch(new RegExp(`^savedq: ClickHouse at http://\\w+@127\\.0\\.0\\.1:${port} refused the credentials\\.\\n$`));
        expect(r.stderr).not.toMatch(/wrong-password|whatever/);
      }
    });

    it('a query the server cannot run: exit 1, one line, no SQL and no stack trace', async () => {
      const r = await cli(['run', 'usage.api-counts', '-p', 'project=x', '-p', 'interval=daily', '--no-cache'], { env: { ...env, SAVEDQ_CLICKHOUSE_URL: url() } });
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(new RegExp(`^savedq: ClickHouse at http://tester@127\\.0\\.0\\.1:${port} (failed|could not parse)`));
      expect(r.stderr).not.toMatch(/SELECT|edge_logs|libc|PASSWORD|pw-s3cret/i);
    });

    it('over HTTP: 502 saying the credentials were refused, with no address, user or password; the log has the whole message', async () => {
      const lib = libraryOf({ url: url('tester', 'nope-nope'), cacheFile: env.SAVEDQ_CACHE_FILE });
      const logged: string[] = [];
      const s = await startServer(lib, serveOptions({ apiKeys: ['k'] }, { version: 't', log: logInto(logged) }));
      const res = await fetch(`${s.url}/api/endpoints/query/logs.all?project=x`, { headers: { 'X-API-KEY': 'k' } });
      const text = await res.text();
      await s.close();
      await lib.close();
      expect(res.status).toBe(502);
      expect(JSON.parse(text)).toEqual({ error: { code: 'warehouse_error', message: "the warehouse refused savedq's credentials." } });
      expect(logged).toContain(`ClickHouse at http://tester@127.0.0.1:${port} refused the credentials.`);
      expect(logged.join('\n')).not.toContain('nope-nope');
    });

    it('as one host of several: a statement refused by the first reaches it, status asks its /ping', async () => {
      const refused = `http://127.0.0.1:${await freePort()}`;
      const both = `${refused},${url('tester', 'nope-nope')}`;
      const r = await cli(['run', 'logs.all', '-p', 'project=x', '--no-cache'], { env: { ...env, SAVEDQ_CLICKHOUSE_URL: both } });
      expect(r.code).toBe(1);
      // Its own refusal of the credentials: the statement moved on to it.
      expect(r.stderr).toContain(`warning: ClickHouse at ${refused} is down (connection refused); the other hosts answer its calls.\n`);
      expect(r.stderr).toContain(`savedq: ClickHouse at http://tester@127.0.0.1:${port} refused the credentials.\n`);
      expect(r.stderr).not.toContain('nope-nope');
      const status = await cli(['status'], { env: { ...env, SAVEDQ_CLICKHOUSE_URL: `${refused},${url()}` } });
      expect(status.stdout).toContain(`${refused}: does not answer (`);
      expect(status.stdout).toContain(`http://tester@127.0.0.1:${port}: answers`);
      // (KILL QUERY is sent with the query id a typed parameter, which 18.16 predates: the stand-in's tests take it.)
    });

    it('a server that stops answering: exit 1 after the time limit, saying so', async () => {
      server.kill('SIGSTOP');
      try {
        const started = Date.now();
        const r = await cli(['--timeout', '1', 'run', 'logs.all', '-p', 'project=x'], { env: { ...env, SAVEDQ_CLICKHOUSE_URL: url() } });
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/^savedq: logs\.all ran past its time limit of 1 s \(--timeout\) on ClickHouse at http:\/\/tester@127\.0\.0\.1:\d+\.\n$/);
        expect(Date.now() - started).toBeLessThan(20_000);
      } finally {
        server.kill('SIGCONT');
      }
    });

    it.runIf(has.ss)('a server that dies mid-query: exit 1, one clear line', async () => {
      server.kill('SIGSTOP');
      const pending = cli(['--timeout', '20', 'run', 'logs.all', '-p', 'project=x'], { env: { ...env, SAVEDQ_CLICKHOUSE_URL: url() } });
      // Stopped, the server's kernel still takes the connection: killed once the CLI has one (this
      // process's own keep-alive connections, of fetch, do not count).
      const others = () => spawnSync('ss', ['-Htnp', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.trim() !== '' && !l.includes(`pid=${process.pid},`));
      await eventually('the CLI to connect to the server', () => others().length > 0);
      server.kill('SIGKILL');
      const r = await pending;
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^savedq: cannot reach ClickHouse at http:\/\/tester@127\.0\.0\.1:\d+: connection (reset|closed)\.\n$/);
      // And once it is gone entirely: refused.
      const gone = await cli(['run', 'logs.all', '-p', 'project=x'], { env: { ...env, SAVEDQ_CLICKHOUSE_URL: url() } });
      expect(gone.stderr).toMatch(/connection refused\.\n$/);
    });
  });
});
