import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

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
    process.chdir(previous);
  }
}
