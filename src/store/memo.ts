import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BoundedMap } from '../bounded.js';
import { makePrivateDirectory, ownDirectory, sqlitePathCheck } from '../fs.js';
import type { LocalMemo } from './types.js';

/**
 * The kinds of key a local memo holds, each made here alone: a definition's reading by its file's whole
 * text (and the reader's version), a folder set's index of names and ids, a pattern RE2 compiled, and a
 * definition the engine took (by its digest, on a source).
 */
export const memoKeys = {
  definition: (version: number, builtin: boolean, stem: string, text: string) => `definition:${version}:${builtin ? 'b' : 'u'}:${stem}:${text}`,
  index: (version: number, dirs: readonly string[]) => `index:${version}:${dirs.join('\n')}`,
  pattern: (pattern: string) => `pattern:${pattern}`,
  engineTook: (source: string, digest: string) => `engine-took:${source}:${digest}`,
  /** The engine planned SQL over a call's answer (an alert's condition) without a word: by the call's key. */
  engineTookOver: (source: string, callKey: string) => `engine-took-over:${source}:${callKey}`,
};

/** A memo file's name (fileNameOf's), or one being written (`.<pid>.tmp`): all pruning ever removes. */
const MEMO_FILE = /^[0-9a-z]+-[0-9a-z]+\.json(\.\d+\.tmp)?$/;

/**
 * The memo's folder: beside the cache file, named after it as SQLite names its journal
 * (`results.sqlite-definitions`), so that it is never a folder of the user's that happens to sit there.
 */
export function memoDirOf(cacheFile: string): string {
  return `${cacheFile}-definitions`;
}

/** FNV-1a, 32 bits, twice (two offsets): a file name for a key. Not a digest: the key itself is kept and compared. */
function fileNameOf(key: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  return `${(a >>> 0).toString(36)}-${(b >>> 0).toString(36)}.json`;
}

/**
 * What this machine remembers (memoKeys: definitions' readings, folders' indexes, patterns that compile,
 * definitions the engine took), one small file a key in a folder of the user's own (0700, beside the cache file: memoDirOf): read without
 * opening SQLite, so a run that needs no cached result (`--no-cache`) pays for no database. Each file
 * keeps its whole key, compared on reading: two keys that share a file name only ever make a miss. A
 * folder that others may write to is not used (a planted reading would be run), nor one beside a cache
 * file's path that is not savedq's to use (`--cache-file /dev/null`: nothing is written in /dev).
 */
export function fileMemo(cacheFile: string, cacheFileProblem = sqlitePathCheck(cacheFile)): LocalMemo {
  const dir = memoDirOf(cacheFile);
  // Checked (and made, 0700, its parent too when missing) on first use, once.
  let usable: boolean | undefined;
  const ready = (): boolean => {
    if (usable === undefined) {
      try {
        if (cacheFileProblem() !== undefined) usable = false;
        else {
          makePrivateDirectory(dirname(dir));
          usable = ownDirectory(dir) === undefined;
        }
      } catch {
        usable = false; // cannot be made: the memo is only a saving
      }
    }
    return usable;
  };
  return {
    async get(key) {
      if (!ready()) return undefined;
      try {
        const stored = JSON.parse(readFileSync(join(dir, fileNameOf(key)), 'utf8')) as { key?: unknown; value?: unknown };
        return stored.key === key ? stored.value : undefined;
      } catch {
        return undefined;
      }
    },
    async set(key, value) {
      if (!ready()) return;
      const file = join(dir, fileNameOf(key));
      try {
        // Whole or not at all: written aside, then renamed over (another process may read it meanwhile).
        writeFileSync(`${file}.${process.pid}.tmp`, JSON.stringify({ key, value }), { mode: 0o600 });
        renameSync(`${file}.${process.pid}.tmp`, file);
      } catch {
        // Not remembered: read again next time.
      }
    },
  };
}

/** A memo in this process's memory, of at most `maxEntries` keys (the least recently written go first). */
export function memoryMemo(maxEntries: number): LocalMemo {
  const kept = new BoundedMap<string, unknown>(maxEntries);
  return {
    async get(key) {
      return kept.get(key);
    },
    async set(key, value) {
      kept.set(key, value);
    },
  };
}

/**
 * Deletes what the memo wrote longer ago than `maxAgeMs`, then the oldest past `maxFiles` (each is
 * written again when needed): only files named as the memo names them, whatever else is there.
 */
export function pruneMemo(cacheFile: string, maxAgeMs: number, maxFiles = Infinity, now = Date.now()): number {
  const dir = memoDirOf(cacheFile);
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  const kept: { file: string; at: number }[] = [];
  for (const name of names) {
    if (!MEMO_FILE.test(name)) continue;
    const file = join(dir, name);
    try {
      const at = statSync(file).mtimeMs;
      if (now - at > maxAgeMs) {
        rmSync(file, { force: true });
        removed += 1;
      } else kept.push({ file, at });
    } catch {
      // gone meanwhile
    }
  }
  for (const { file } of kept.sort((a, b) => b.at - a.at).slice(maxFiles)) {
    rmSync(file, { force: true });
    removed += 1;
  }
  return removed;
}
