import { renameSync } from 'node:fs';
import type Keyv from 'keyv';
import { errnoText } from '../errno.js';
import { SavedqError } from '../errors.js';
import { ownFile, sqlitePathCheck, type Unsafe } from '../fs.js';
import { loadingSqlite } from './sqlite-module.js';

/** Every key savedq keeps in its SQLite file sits under this namespace, after a prefix of its kind. */
export const NAMESPACE = 'savedq';
/** SQLite waits this long for another process's write before giving up. */
const BUSY_TIMEOUT_MS = 10_000;

/** Where a store's warnings go: the surface that made the library decides (standard error, serve's log). */
export type Warn = (message: string) => void;

/**
 * The SQLite file savedq keeps its results, served records and definitions' readings in, through keyv +
 * @keyv/sqlite, shared safely by several processes (WAL journal, busy timeout, one statement per
 * write). A broken file never breaks a query: the first failure disables the store for this process
 * and says so once through `warn`; a damaged database is moved aside and rebuilt, and a path that is
 * not a database's (`pathProblem`: a folder, a device, a file of other text) is left as it is.
 */
export class SqliteStore {
  readonly file: string;
  readonly #warn: Warn;
  readonly #pathProblem: () => Unsafe;
  #keyv: Promise<Keyv> | undefined;
  #disabled = false;

  constructor(file: string, warn: Warn, pathProblem = sqlitePathCheck(file)) {
    this.file = file;
    this.#warn = warn;
    this.#pathProblem = pathProblem;
  }

  async #open(): Promise<Keyv> {
    const [{ default: KeyvClass }, { default: KeyvSqlite }] = await loadingSqlite(Promise.all([import('keyv'), import('@keyv/sqlite')]));
    // A file that was never a database is someone's: left as it is, its mode too (the store is not used).
    const unsafe = this.#pathProblem() ?? ownFile(this.file);
    if (unsafe !== undefined) throw new Error(unsafe);
    const connect = async (): Promise<Keyv> => {
      const store = new KeyvSqlite({ uri: `sqlite://${this.file}`, busyTimeout: BUSY_TIMEOUT_MS, iterationLimit: 1000 });
      store.on('error', () => undefined); // failures reach us through the rejected query below
      await store.query('PRAGMA journal_mode = WAL');
      await store.query('PRAGMA synchronous = NORMAL');
      // throwOnErrors: keyv otherwise turns a failed read into a silent miss, and we want to warn.
      const keyv = new KeyvClass({ store, namespace: NAMESPACE, throwOnErrors: true });
      keyv.on('error', () => undefined);
      return keyv;
    };
    try {
      return await connect();
    } catch (err) {
      if (!isCorrupt(err)) throw err;
      // A damaged database: keep the old file for inspection and start a new one.
      renameSync(this.file, `${this.file}.corrupt-${Date.now()}`);
      this.#warn(`cache file ${this.file} was damaged; moved it aside and started a new one.`);
      return connect();
    }
  }

  async #store(): Promise<Keyv | undefined> {
    if (this.#disabled) return undefined;
    this.#keyv ??= this.#open();
    try {
      return await this.#keyv;
    } catch (err) {
      this.#fail(err);
      return undefined;
    }
  }

  #fail(err: unknown): void {
    if (this.#disabled) return;
    this.#disabled = true;
    this.#warn(`results cache ${this.file} is not usable (${reasonOf(err)}); answering without it.`);
  }

  /** Runs an operation on the store; any failure disables it and yields `fallback`. */
  async guard<T>(fallback: T, op: (keyv: Keyv) => Promise<T>): Promise<T> {
    const keyv = await this.#store();
    if (!keyv) return fallback;
    try {
      return await op(keyv);
    } catch (err) {
      this.#fail(err);
      return fallback;
    }
  }

  get<T>(key: string): Promise<T | undefined> {
    return this.guard(undefined, (keyv) => keyv.get<T>(key));
  }

  async set(key: string, value: unknown, ttlMs: number): Promise<void> {
    await this.guard(undefined, async (keyv) => {
      await keyv.set(key, value, ttlMs);
    });
  }

  /** The live values of one kind (`kind:…` keys), read by the store's iterator narrowed to them, never the others. */
  entries<T>(kind: string): Promise<[string, T][]> {
    return this.guard([], async (keyv) => {
      const found: [string, T][] = [];
      const store = keyv.store as { iterator(prefix: string): AsyncGenerator<[string, unknown]> };
      const full = `${NAMESPACE}:${kind}:`;
      for await (const [rawKey, raw] of store.iterator(`${NAMESPACE}:${kind}`)) {
        if (!rawKey.startsWith(full)) continue;
        const data = (await keyv.deserializeData(raw as string)) as { value?: T; expires?: number } | undefined;
        if (data?.value === undefined || (typeof data.expires === 'number' && data.expires < Date.now())) continue;
        found.push([rawKey.slice(full.length), data.value]);
      }
      return found;
    });
  }

  /** Runs SQL on the file's table (`keyv`) of savedq's keys: what keyv has no call for (pruning). */
  sql<T>(statement: string, ...params: unknown[]): Promise<T[]> {
    return this.guard([] as T[], async (keyv) => {
      const store = keyv.store as { query(sql: string, ...params: unknown[]): Promise<T[]> };
      return store.query(statement, ...params);
    });
  }

  /** Removes every key. */
  async clear(): Promise<void> {
    await this.guard(undefined, (keyv) => keyv.clear());
  }

  async close(): Promise<void> {
    const keyv = this.#keyv;
    this.#keyv = undefined;
    if (keyv) await (await keyv.catch(() => undefined))?.disconnect().catch(() => undefined);
  }
}

/** Why the store failed, in a few words: savedq's own message, a file system's error, or SQLite's without its code. */
function reasonOf(err: unknown): string {
  if (err instanceof SavedqError) return err.message.replace(/\.$/, '');
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined && !code.startsWith('SQLITE')) return errnoText(err);
  return err instanceof Error ? err.message.replace(/^SQLITE_\w+:\s*/, '') : String(err);
}

function isCorrupt(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT';
}
