// @ts-check
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A real PostgreSQL for the tests and the bench (docs/scaling.md): Debian's server binaries, a cluster of
// its own in a temporary folder, listening on 127.0.0.1 only, on a port free when it starts; stopped and
// removed after. initdb refuses root: as root (CI), the cluster is the postgres user's. Plain JavaScript
// (typed in JSDoc), so that bench/bench.mjs runs it as the tests do.

/**
 * Where Debian keeps the server's programs (the newest version installed).
 * @returns {string | undefined}
 */
export function postgresBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/**
 * The user the cluster runs as: postgres when the tests run as root (initdb refuses root), else the tests' own.
 * @returns {{ uid: number; gid: number } | undefined}
 */
function clusterUser() {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/**
 * A PostgreSQL cluster of a test's own.
 * @typedef {object} Postgres
 * @property {string} url savedq's URL of it, with the password: the role `savedq`, the database `postgres`.
 * @property {string} shown The URL without its password, as savedq shows it.
 * @property {string} password
 * @property {number} port
 * @property {(sql: string) => string} psql Runs SQL as the cluster's superuser (psql over the cluster's own socket).
 * @property {() => void} stop Stops the server (fast: connections cut), as a store that goes away.
 * @property {() => void} start Starts it again on the same port.
 * @property {() => void} remove Stops it for good and removes its folder.
 */

/** @returns {Promise<number>} */
async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise((resolve) => server.close(() => resolve(undefined)));
  return port;
}

/**
 * Starts a cluster: initdb in a temporary folder, password authentication over TCP, trust over its own
 * socket; with `tls`, TLS offered too, with a self-signed certificate made by openssl (`ca`: its file).
 * @param {{ tls?: boolean }} [options]
 * @returns {Promise<Postgres & { ca?: string }>}
 */
export async function startPostgres(options = {}) {
  const bin = postgresBin();
  if (!bin) throw new Error('no PostgreSQL server here: apt-get install postgresql');
  const dir = mkdtempSync(join(tmpdir(), 'savedq-pg-'));
  const user = clusterUser();
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  writeFileSync(join(dir, 'pw'), `${password}\n`);
  if (user) {
    chownSync(dir, user.uid, user.gid);
    chownSync(join(dir, 'pw'), user.uid, user.gid);
  }
  /** @param {string} program @param {string[]} args */
  const as = (program, args) => {
    const command = user ? 'setpriv' : join(bin, program);
    const argv = user ? [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', join(bin, program), ...args] : args;
    const r = spawnSync(command, argv, { encoding: 'utf8', cwd: dir, timeout: 120_000 });
    if (r.status !== 0) throw new Error(`${program} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  const data = join(dir, 'data');
  as('initdb', ['-D', data, '-U', 'savedq', `--pwfile=${join(dir, 'pw')}`, '--auth-local=trust', '--auth-host=scram-sha-256', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  let tls = '';
  if (options.tls) {
    const made = spawnSync('openssl', ['req', '-new', '-x509', '-days', '2', '-nodes', '-subj', '/CN=savedq-test', '-keyout', join(data, 'server.key'), '-out', join(data, 'server.crt')], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`);
    if (user) {
      chownSync(join(data, 'server.key'), user.uid, user.gid);
      chownSync(join(data, 'server.crt'), user.uid, user.gid);
    }
    chmodSync(join(data, 'server.key'), 0o600);
    copyFileSync(join(data, 'server.crt'), join(dir, 'ca.crt'));
    tls = ' -c ssl=on';
  }
  const start = () => {
    as('pg_ctl', ['-D', data, '-o', `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off${tls}`, '-l', join(dir, 'log'), '-w', '-t', '120', 'start']);
  };
  const stop = () => {
    as('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '120', 'stop']);
  };
  start();
  return {
    url: `postgres://savedq:${password}@127.0.0.1:${port}/postgres`,
    shown: `postgres://savedq@127.0.0.1:${port}/postgres`,
    password,
    port,
    ...(options.tls ? { ca: join(dir, 'ca.crt') } : {}),
    psql: (sql) => as('psql', ['-h', dir, '-p', String(port), '-U', 'savedq', '-d', 'postgres', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql]),
    stop,
    start,
    remove: () => {
      try {
        stop();
      } catch {
        // stopped already
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
