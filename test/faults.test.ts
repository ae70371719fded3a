import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, chownSync, createWriteStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { binPath, cli, eventually, tempDir, libraryOf, LONG_TEST_MS } from './helpers.js';
import { has } from './system.js';

const dir = tempDir();
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), PATH: process.env.PATH ?? '' };
const LINES = 400_000;

async function writeEvents(file: string): Promise<void> {
  const out = createWriteStream(file);
  for (let i = 0; i < LINES; i++) {
    const line = `${JSON.stringify({ id: randomUUID(), timestamp: `2026-03-${String(1 + (i % 28)).padStart(2, '0')}T00:00:00Z`, project: 'killed', event_message: `e${i}` })}\n`;
    if (!out.write(line)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
}

/** Parts the engine has committed to disk (directories named partition_min_max_level). */
function committedParts(root: string): number {
  try {
    return readdirSync(root, { recursive: true }).filter((p) => /(^|\/)\d{8}_\d+_\d+_\d+$/.test(String(p))).length;
  } catch {
    return 0;
  }
}

async function count(dataDir = env.SAVEDQ_DATA_DIR): Promise<{ n: number; ids: number }> {
  const r = await cli(['run', 'logs.all', '-p', 'project=nobody'], { env: { ...env, SAVEDQ_DATA_DIR: dataDir } }); // opens the engine, proving it is usable
  expect(r.code, r.stderr).toBe(0);
  const lib = libraryOf({ dataDir, cacheFile: env.SAVEDQ_CACHE_FILE });
  const [row] = await (await lib.warehouse()).query("SELECT count() AS n, uniqExact(id) AS ids FROM edge_logs WHERE project = 'killed'", {});
  await lib.close();
  return row as { n: number; ids: number };
}

describe('interrupted work loses nothing and duplicates nothing', () => {
  it('a load killed with SIGKILL halfway and run again stores every row exactly once', async () => {
    const file = join(dir, 'events.ndjson');
    await writeEvents(file);
    // The first run reads half the file from a pipe, stores what batches it can, and is killed waiting
    // for the rest. (Not in the instant the engine commits a part: see the README on the window the
    // engine leaves there.) The second run reads the whole file by name: batches are cut by content,
    // so the first half makes the same batches, and the engine drops the ones already stored.
    const child = spawn(process.execPath, [binPath, 'load', 'edge_logs', '-', '--batch-mb', '4'], { env, stdio: ['pipe', 'ignore', 'ignore'] });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const text = readFileSync(file);
    // What the pipe still held when the load was killed is refused (EPIPE): that is the point.
    child.stdin.on('error', () => undefined);
    child.stdin.write(text.subarray(0, text.length >> 1));
    // What the first half makes is stored once the parts on disk stop changing (ten looks in a row).
    let parts = -1;
    let stable = 0;
    await eventually('the first half of the file to be stored', () => {
      const now = committedParts(env.SAVEDQ_DATA_DIR);
      stable = now > 0 && now === parts ? stable + 1 : 0;
      parts = now;
      return stable >= 10;
    });
    child.kill('SIGKILL');
    await exited;
    const partial = await count();
    expect(partial.n).toBeGreaterThan(0);
    expect(partial.n).toBeLessThan(LINES / 2);
    const again = await cli(['load', 'edge_logs', file, '--batch-mb', '4'], { env });
    expect(again.code, again.stderr).toBe(0);
    // What the killed load stored is counted as there already, the rest as loaded now.
    expect(again.stderr).toContain(`loaded ${LINES - partial.n} rows into edge_logs, ${partial.n} there already (an earlier load of the same lines), rejected 0 lines`);
    expect(await count()).toEqual({ n: LINES, ids: LINES });
  }, LONG_TEST_MS);

  it('a load killed with SIGKILL while it commits, at any moment, and run again stores every row exactly once', async () => {
    // Killed while the engine writes parts, perhaps between recording a part's token and committing the
    // part: the second run finishes the batches the first left unfinished (see loadBatch).
    const file = join(dir, 'events.ndjson');
    for (const delay of [0, 120, 350]) {
      const dataDir = join(dir, `data-killed-${delay}`);
      const child = spawn(process.execPath, [binPath, 'load', 'edge_logs', file, '--batch-mb', '4'], {
        env: { ...env, SAVEDQ_DATA_DIR: dataDir },
        stdio: 'ignore',
      });
      const exited = new Promise((resolve) => child.on('exit', resolve));
      await eventually('the load to commit its first part', () => committedParts(dataDir) > 0);
      // A kill at three moments after that, none of which the test needs to have come: each is a moment.
      await new Promise((r) => setTimeout(r, delay));
      child.kill('SIGKILL');
      await exited;
      const again = await cli(['load', 'edge_logs', file, '--batch-mb', '4'], { env: { ...env, SAVEDQ_DATA_DIR: dataDir } });
      expect(again.code, again.stderr).toBe(0);
      expect(await count(dataDir)).toEqual({ n: LINES, ids: LINES });
    }
  }, LONG_TEST_MS);

  it('SIGINT during a load exits 130 within a few seconds and leaves everything usable', async () => {
    // The load reads from a pipe the test feeds, so it cannot finish before the interrupt: half the
    // file, and the signal once the engine has stored a part of it (while it is storing the rest).
    const dataDir = join(dir, 'data-interrupted');
    const file = join(dir, 'events.ndjson');
    const child = spawn(process.execPath, [binPath, 'load', 'edge_logs', '-', '--batch-mb', '4'], { env: { ...env, SAVEDQ_DATA_DIR: dataDir }, stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const text = readFileSync(file);
    child.stdin.on('error', () => undefined); // the load stops reading when interrupted
    child.stdin.write(text.subarray(0, text.length >> 1));
    await eventually('the load to store its first part', () => committedParts(dataDir) > 0);
    const sent = Date.now();
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(Date.now() - sent).toBeLessThan(5000); // the promise: stopped within seconds, whatever it was doing
    expect(stderr).toContain('savedq: interrupted (SIGINT); stopping.');
    child.stdin.destroy();
    // The next process gets the data directory, and what was stored is there once; loading the whole
    // file again stores the rest.
    const partial = await count(dataDir);
    expect(partial.n).toBe(partial.ids);
    expect(partial.n).toBeGreaterThan(0);
    const again = await cli(['load', 'edge_logs', file, '--batch-mb', '4'], { env: { ...env, SAVEDQ_DATA_DIR: dataDir } });
    expect(again.code, again.stderr).toBe(0);
    expect(await count(dataDir)).toEqual({ n: LINES, ids: LINES });
  }, LONG_TEST_MS);
});

describe('an interrupted load of the sample', () => {
  /** Each log table's rows, and a digest of their ids that tells one load of the sample from another. */
  async function tables(dataDir: string): Promise<{ edge: number; fn: number; edgeIds: string; fnIds: string }> {
    const lib = libraryOf({ dataDir, cacheFile: join(dir, 'sample-count.sqlite') });
    const [row] = await (await lib.warehouse()).query(
      'SELECT (SELECT count() FROM edge_logs) AS edge, (SELECT count() FROM function_edge_logs) AS fn, (SELECT toString(groupBitXor(cityHash64(id))) FROM edge_logs) AS edgeIds, (SELECT toString(groupBitXor(cityHash64(id))) FROM function_edge_logs) AS fnIds',
      {},
    );
    await lib.close();
    return row as { edge: number; fn: number; edgeIds: string; fnIds: string };
  }

  it('Ctrl-C or SIGTERM at any moment of load --sample --replace exits 130 (never a crash) and leaves both tables old or both new', async () => {
    const dataDir = join(dir, 'data-sample');
    const first = await cli(['load', '--sample'], { env: { ...env, SAVEDQ_DATA_DIR: dataDir } });
    expect(first.code, first.stderr).toBe(0);
    let before = await tables(dataDir);
    expect([before.edge, before.fn]).toEqual([60_000, 24_000]);
    // Moments along the load, told by the parts the engine has written for it: its first, and two later.
    for (const [signal, parts] of [['SIGINT', 1], ['SIGTERM', 12], ['SIGINT', 30], ['SIGTERM', 60]] as const) {
      const baseline = committedParts(dataDir);
      const child = spawn(process.execPath, [binPath, 'load', '--sample', '--replace'], { env: { ...env, SAVEDQ_DATA_DIR: dataDir }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, killedBy) => resolve({ code, signal: killedBy })));
      await eventually(`${parts} parts of the new sample written, or the load done`, () => committedParts(dataDir) >= baseline + parts || child.exitCode !== null);
      child.kill(signal);
      const end = await exited;
      expect(end.signal, stderr).toBeNull();
      expect([0, 130], stderr).toContain(end.code);
      const after = await tables(dataDir);
      expect([after.edge, after.fn], `${signal} after ${parts} parts`).toEqual([60_000, 24_000]);
      // Both as they were, or both the new sample.
      const same = [after.edgeIds === before.edgeIds, after.fnIds === before.fnIds];
      expect(same, `${signal} after ${parts} parts, exit ${end.code}: ${stderr}`).toEqual(end.code === 0 ? [false, false] : [same[0], same[0]]);
      before = after;
    }
  }, LONG_TEST_MS);
});

describe('a full disk', () => {
  const mountPoint = join(dir, 'small-disk');
  mkdirSync(mountPoint, { recursive: true });
  // A 3 MB tmpfs stands in for a full disk; mounting it needs root (as on CI).
  it.runIf(has.root)('fails the load with exit 1 naming the data directory, and leaves it usable', async () => {
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', mountPoint], { encoding: 'utf8' });
    expect(mounted.status, mounted.stderr).toBe(0);
    try {
      const small = { ...env, SAVEDQ_DATA_DIR: join(mountPoint, 'data') };
      const r = await cli(['load', 'edge_logs', join(dir, 'events.ndjson')], { env: small });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`the embedded engine at ${join(mountPoint, 'data')} is out of disk space`);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      const after = await cli(['run', 'logs.all', '-p', 'project=killed', '-p', 'project_tier=PAYG', '--at', '2026-03-20T00:00:00Z'], { env: small });
      expect(after.code, after.stderr).toBe(0);
    } finally {
      spawnSync('umount', [mountPoint]);
    }
  }, LONG_TEST_MS);
});

describe('interrupting run and warm', () => {
  for (const args of [
    ['run', 'usage.api-counts', '-p', 'project=x', '-p', 'interval=daily', '--no-cache'],
    ['warm', 'usage.api-counts', '-p', 'project=x', '-p', 'interval=daily'],
  ]) {
    it(`SIGINT during ${args[0]}, even while it waits for the data directory, exits 130 at once`, async () => {
      // Hold the data directory here, so the command is surely in the middle of its work when interrupted.
      const holder = libraryOf({ dataDir: env.SAVEDQ_DATA_DIR, cacheFile: join(dir, 'holder.sqlite') });
      await holder.warehouse();
      try {
        const child = spawn(process.execPath, [binPath, '--lock-wait', '60', '--verbose', ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        const exited = new Promise<[number | null, string | null]>((resolve) => child.on('exit', (code, signal) => resolve([code, signal])));
        await eventually('the command to say it waits for the data directory', () => stderr.includes('waiting for data directory'));
        const sent = Date.now();
        child.kill('SIGINT');
        expect(await exited).toEqual([130, null]);
        expect(Date.now() - sent).toBeLessThan(3000);
        expect(stderr).toContain('savedq: interrupted (SIGINT); stopping.');
      } finally {
        await holder.close();
      }
      const next = await cli(['run', 'logs.all', '-p', 'project=x'], { env });
      expect(next.code, next.stderr).toBe(0);
    });
  }
});

describe('places savedq may not use', () => {
  // Run as the unprivileged user "nobody" (root can read anything). The checkout may sit where nobody
  // cannot enter (CI clones into a private temporary folder): nobody runs it through a bind mount of it
  // in a folder that anyone may enter, the checkout's own folder made enterable (not readable) by others
  // for the while, as a clone of a private folder is not.
  const open = mkdtempSync(join(tmpdir(), 'savedq-nobody-'));
  spawnSync('chmod', ['0777', open]);
  const root = dirname(dirname(binPath));
  const rootMode = statSync(root).mode & 0o7777;
  const mounted = join(open, 'savedq');
  if (has.root) {
    chmodSync(root, rootMode | 0o001);
    mkdirSync(mounted);
    const bound = spawnSync('mount', ['--bind', root, mounted], { encoding: 'utf8' });
    if (bound.status !== 0) throw new Error(`mount --bind of the checkout failed: ${bound.stderr}`);
  }
  const nobodysBin = join(mounted, relative(root, binPath));
  afterAll(() => {
    if (!has.root) return;
    spawnSync('umount', [mounted]);
    chmodSync(root, rootMode);
    rmSync(open, { recursive: true, force: true });
  });
  // In a folder nobody may enter, as another user's shell would be (not the checkout, which may be private).
  const asNobody = (args: string[], extra: Record<string, string>) =>
    spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'env', `PATH=${process.env.PATH ?? ''}`, 'HOME=/tmp', ...Object.entries(extra).map(([k, v]) => `${k}=${v}`), process.execPath, nobodysBin, ...args], { encoding: 'utf8', cwd: open });

  it.runIf(has.root)('is run by another user of the machine, through a folder it may enter', () => {
    const r = asNobody(['--version'], {});
    expect(r.status, r.stderr).toBe(0);
  });

  /** A folder of nobody's own, for its cache files. */
  const nobodysHome = () => {
    const home = join(open, 'home');
    mkdirSync(home, { recursive: true, mode: 0o700 });
    chownSync(home, 65534, 65534);
    return home;
  };

  it.runIf(has.root)('an unreadable data directory of its own: exit 1 naming it', () => {
    const locked = join(open, 'locked');
    mkdirSync(locked, { mode: 0o000 });
    chownSync(locked, 65534, 65534);
    const r = asNobody(['run', 'logs.all', '-p', 'project=x'], { SAVEDQ_DATA_DIR: locked, SAVEDQ_CACHE_FILE: join(nobodysHome(), 'c.sqlite') });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`savedq: cannot use data directory ${locked}: permission denied.\n`);
  });

  it.runIf(has.root)('a data directory another user owns, or others may write to: refused (exit 2), naming it and the fix', () => {
    const theirs = join(open, 'theirs');
    mkdirSync(theirs, { mode: 0o700 });
    const r = asNobody(['run', 'logs.all', '-p', 'project=x'], { SAVEDQ_DATA_DIR: theirs, SAVEDQ_CACHE_FILE: join(nobodysHome(), 'c2.sqlite') });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`savedq: refusing data directory ${theirs}: it belongs to another user (uid 0); use a directory of your own.\n`);
    const shared = join(open, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    chownSync(shared, 65534, 65534);
    const wide = asNobody(['run', 'logs.all', '-p', 'project=x'], { SAVEDQ_DATA_DIR: shared, SAVEDQ_CACHE_FILE: join(nobodysHome(), 'c3.sqlite') });
    expect(wide.status).toBe(2);
    expect(wide.stderr).toBe(`savedq: refusing data directory ${shared}: other users can write to it; run chmod 700 ${shared}.\n`);
  });

  it.runIf(has.root)("an install whose SQLite module this user may not read: said so, not as a build that is missing", () => {
    const module = join(root, 'node_modules', 'sqlite3', 'build', 'Release', 'node_sqlite3.node');
    const mode = statSync(module).mode & 0o7777;
    const data = join(open, 'data-unreadable-module');
    mkdirSync(data, { mode: 0o700 });
    chownSync(data, 65534, 65534);
    chmodSync(module, 0o600);
    try {
      const r = asNobody(['run', 'usage.api-counts', '-p', 'project=x', '-p', 'interval=daily'], { SAVEDQ_DATA_DIR: data, SAVEDQ_CACHE_FILE: join(nobodysHome(), 'c4.sqlite') });
      expect(r.stderr).toMatch(/SQLite's native module \S+node_sqlite3\.node cannot be read by this user \(uid 65534\): savedq's install must be readable by whoever runs it\./);
      expect(r.stderr).not.toContain('npm rebuild');
    } finally {
      chmodSync(module, mode);
    }
  });

  it.runIf(has.root)('a cache file that cannot be written: one warning, and the answer', () => {
    const data = join(open, 'data');
    mkdirSync(data, { mode: 0o700 });
    chownSync(data, 65534, 65534);
    const readOnly = join(open, 'read-only');
    mkdirSync(readOnly, { mode: 0o555 });
    const r = asNobody(['run', 'usage.api-counts', '-p', 'project=x', '-p', 'interval=daily'], {
      SAVEDQ_DATA_DIR: data,
      SAVEDQ_CACHE_FILE: join(readOnly, 'cache.sqlite'),
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('[]\n');
    expect(r.stderr).toMatch(/^warning: results cache .*read-only\/cache.sqlite is not usable \(permission denied\); answering without it\.\n$/);
  });
});
