import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * `mkdir -p`: makes a directory and any missing parents. Not Node 20's recursive mkdirSync, which loops
 * forever on what some pseudo-filesystems answer (/proc): here each missing level is made once, and
 * the first refusal is the answer.
 */
export function makeDirectory(dir: string): void {
  const missing: string[] = [];
  for (let current = resolve(dir); ; current = dirname(current)) {
    try {
      if (statSync(current).isDirectory()) break;
      throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${current}'`), { code: 'ENOTDIR', path: current });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      missing.push(current);
      if (dirname(current) === current) break;
    }
  }
  for (const level of missing.reverse()) {
    try {
      mkdirSync(level);
    } catch (err) {
      // Made meanwhile by another process: as good as made here.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

/** Runs `fn` (synchronous: nothing else runs meanwhile) with the process standing in `dir`, then back where it was. */
export function inDirectory<T>(dir: string, fn: () => T): T {
  const previous = process.cwd();
  process.chdir(dir);
  try {
    return fn();
  } finally {
    try {
      process.chdir(previous);
    } catch {
      // A working directory this user may not enter again (another user's, left by sudo -u): every path
      // savedq uses was made whole when its configuration was read, so staying here changes none.
    }
  }
}

/** Makes a directory (its parents as `mkdir -p` does) with mode 0700 when it is missing; leaves one that exists as it is. */
export function makePrivateDirectory(dir: string): void {
  if (existsSync(dir)) return;
  makeDirectory(dirname(dir));
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** Why a path of savedq's is not safe to use, with the command that fixes it; undefined when it is. */
export type Unsafe = string | undefined;

/**
 * A directory of savedq's own (the data directory): made with mode 0700 when missing, narrowed to it
 * when its user is this process's and it is wider. Unsafe when another user owns it, or group or others
 * may write to it (they could plant or replace what savedq reads).
 */
export function ownDirectory(dir: string): Unsafe {
  makePrivateDirectory(dir);
  const stat = statSync(dir);
  if (!stat.isDirectory()) return undefined; // the caller says what it is not
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) return `it belongs to another user (uid ${stat.uid}); use a directory of your own`;
  if ((stat.mode & 0o022) !== 0) return `other users can write to it; run chmod 700 ${dir}`;
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, stat.mode & 0o700);
  return undefined;
}

/**
 * A file of savedq's own (the cache file and its -wal and -shm): created with mode 0600, narrowed to
 * it when its user is this process's and it is wider. Unsafe when another user owns it, others may
 * write to it, or its folder lets others replace it (writable by them without the sticky bit). What
 * is not a file, or not SQLite's, is notSqlite's to say first (`chmod 600 /dev/null` is no advice).
 */
export function ownFile(file: string): Unsafe {
  const dir = dirname(file);
  makePrivateDirectory(dir);
  const folder = statSync(dir);
  if ((folder.mode & 0o022) !== 0 && (folder.mode & 0o1000) === 0) return `other users can replace files in ${dir}; run chmod 700 ${dir}`;
  const uid = process.getuid?.();
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    if (path === file && !existsSync(file)) closeSync(openSync(file, 'a', 0o600));
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) continue;
    if (uid !== undefined && stat.uid !== uid) return `${path} belongs to another user (uid ${stat.uid}); use a cache file of your own (--cache-file)`;
    if ((stat.mode & 0o022) !== 0) return `other users can write to ${path}; run chmod 600 ${path}`;
    if ((stat.mode & 0o077) !== 0) chmodSync(path, stat.mode & 0o600);
  }
  return undefined;
}

/** SQLite's file header: every database file begins with it. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * Why a path cannot be a SQLite file of savedq's, or undefined when it can: none yet, an empty file
 * (SQLite's new database), or a file that begins with SQLite's header (a damaged database mostly
 * does). A folder, a device or a file of other text (`--cache-file notes.txt`) is left as it is.
 */
function notSqlite(file: string): Unsafe {
  const stat = statSync(file, { throwIfNoEntry: false });
  if (stat === undefined) return undefined;
  if (!stat.isFile()) return `${file} is ${stat.isDirectory() ? 'a folder' : 'a device or a pipe'}, not a file; give --cache-file a file's path`;
  if (stat.size === 0) return undefined;
  const head = Buffer.alloc(SQLITE_HEADER.length);
  const fd = openSync(file, 'r');
  try {
    if (readSync(fd, head, 0, head.length, 0) === head.length && head.equals(SQLITE_HEADER)) return undefined;
  } finally {
    closeSync(fd);
  }
  return `${file} is not a SQLite file; move it away or give --cache-file another path`;
}

/** notSqlite of one path, looked at once whoever asks: the results cache and the memo beside it (on every cache hit), and the alerts' store. */
export function sqlitePathCheck(file: string): () => Unsafe {
  let checked: { problem: Unsafe } | undefined;
  return () => (checked ??= { problem: notSqlite(file) }).problem;
}

/**
 * The files directly in each folder whose name `accepts`, a folder's by name, the folders in their
 * order (queries folders: alerts, tests). A folder that cannot be read has none here: `check` and
 * `list` are the ones to report it.
 */
export function filesIn(folders: readonly string[], accepts: (name: string) => boolean): { readonly name: string; readonly file: string }[] {
  const found: { name: string; file: string }[] = [];
  for (const dir of folders) {
    let names: string[];
    try {
      names = readdirSync(dir).filter(accepts).sort();
    } catch {
      continue;
    }
    for (const name of names) found.push({ name, file: join(dir, name) });
  }
  return found;
}
