import { readFileSync, renameSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { nodeCrypto } from '../lazy.js';

/** The file in an embedded data directory that names the generation of its data. */
export const GENERATION_FILE = 'savedq-generation';

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
  writeFileSync(staged, `${Date.now().toString(36)}-${nodeCrypto().randomBytes(6).toString('hex')}\n`, { mode: 0o600 });
  renameSync(staged, file);
}

/**
 * The generation of a data directory's data for a process that lives long and asks on every request
 * (`serve`): read once, and again only when the file changes (an inotify watch of the directory, as
 * Node's fs.watch gives it), so a request costs no file read. Where the directory cannot be watched,
 * every call reads the file.
 */
export class GenerationWatch {
  readonly #dataDir: string;
  #known: string | undefined;
  #watcher: FSWatcher | undefined;

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
  }

  current(): string {
    if (this.#known !== undefined) return this.#known;
    this.#watch();
    const generation = readGeneration(this.#dataDir);
    // Kept only while a watch will say when it changes.
    if (this.#watcher) this.#known = generation;
    return generation;
  }

  #watch(): void {
    if (this.#watcher) return;
    try {
      this.#watcher = watch(this.#dataDir, { persistent: false }, (_event, file) => {
        if (file === null || file === GENERATION_FILE) this.#known = undefined;
      });
      this.#watcher.on('error', () => this.close());
    } catch {
      // Not there yet, or not watchable: read each time.
    }
  }

  close(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
    this.#known = undefined;
  }
}
