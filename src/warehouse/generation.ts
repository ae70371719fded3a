import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file in an embedded data directory that names the generation of its data. */
const GENERATION_FILE = 'savedq-generation';

/**
 * The generation of an embedded data directory's data: a word that every `savedq load` into it
 * changes, at its start and at its end. Every cache key carries it, so after a load no answer computed
 * before it (or during it) is served for that directory; `warm` computes the served calls anew. ''
 * before the first load. A file, not a row of the warehouse, so that a cache hit never opens the engine.
 */
export function readGeneration(dataDir: string): string {
  try {
    return readFileSync(join(dataDir, GENERATION_FILE), 'utf8').trim();
  } catch {
    return '';
  }
}

/** Starts a new generation of a data directory's data (written whole, so a reader never sees half of it). */
export function newGeneration(dataDir: string): void {
  const file = join(dataDir, GENERATION_FILE);
  const staged = `${file}.${process.pid}.tmp`;
  writeFileSync(staged, `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}\n`, { mode: 0o600 });
  renameSync(staged, file);
}
