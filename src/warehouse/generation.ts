import { readFileSync, renameSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { nodeCrypto } from '../lazy.js';
import type { GenerationState } from '../store/types.js';

/** The file in an embedded data directory that names the generation of its data. */
export const GENERATION_FILE = 'savedq-generation';

/*
 * The generation of an embedded data directory's data (GenerationState), and whether a load is
 * changing it now. The generation is a word that every `savedq load` into the directory changes when
 * it ends; every cache key carries it, so after a load no answer computed before it is served for that
 * directory, and `warm` computes the served calls anew. While a load runs, the generation stays the
 * last complete data's, so its answers are still served from the cache (with no engine), and `loading`
 * says that no answer computed meanwhile may be kept. A load whose process is gone (killed) left data
 * half changed: its mark is then a generation of its own. '' before the first load. A file, not a row
 * of the warehouse, so that a cache hit never opens the engine.
 */

const NONE: GenerationState = { current: '', loading: false };

/** The state of a data directory's data as its file says it: `<generation>`, and a second line `loading <pid> <mark>` while a load runs. */
export function readGenerationState(dataDir: string): GenerationState {
  let text: string;
  try {
    text = readFileSync(join(dataDir, GENERATION_FILE), 'utf8');
  } catch {
    return NONE;
  }
  const [current = '', load = ''] = text.split('\n');
  const [word, pid, mark] = load.split(' ');
  if (word !== 'loading' || !pid || !mark) return { current: current.trim(), loading: false };
  return alive(Number(pid)) ? { current: current.trim(), loading: true } : { current: mark, loading: false };
}

/** The generation of a data directory's data: its last complete load's ('' before the first). */
export function readGeneration(dataDir: string): string {
  return readGenerationState(dataDir).current;
}

/** Whether a process of this machine runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const word = () => `${Date.now().toString(36)}-${nodeCrypto().randomBytes(6).toString('hex')}`;

/** Writes the file whole (a reader never sees half of it). */
function writeState(dataDir: string, text: string): void {
  const file = join(dataDir, GENERATION_FILE);
  const staged = `${file}.${process.pid}.tmp`;
  writeFileSync(staged, text, { mode: 0o600 });
  renameSync(staged, file);
}

/** Says that this process's load is changing the data: the generation stays, marked loading. */
export function beginLoad(dataDir: string): void {
  writeState(dataDir, `${readGeneration(dataDir)}\nloading ${process.pid} ${word()}\n`);
}

/** Starts a new generation of a data directory's data (a load has ended, whole or not). */
export function newGeneration(dataDir: string): void {
  writeState(dataDir, `${word()}\n`);
}

/**
 * The generation of a data directory's data for a process that lives long and asks on every request
 * (`serve`): read once, and again only when the file changes (an inotify watch of the directory, as
 * Node's fs.watch gives it), so a request costs no file read. Where the directory cannot be watched,
 * every call reads the file. While a load is marked, the file is read each time: the load's process
 * may die without a word to the file.
 */
export class GenerationWatch {
  readonly #dataDir: string;
  #known: GenerationState | undefined;
  #watcher: FSWatcher | undefined;

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
  }

  current(): GenerationState {
    if (this.#known !== undefined) return this.#known;
    this.#watch();
    const state = readGenerationState(this.#dataDir);
    // Kept only while a watch will say when it changes.
    if (this.#watcher && !state.loading) this.#known = state;
    return state;
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
