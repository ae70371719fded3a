import { statSync } from 'node:fs';
import type { NormalisedParams, Row } from '../queries/types.js';
import type { QueryStatistics } from '../warehouse/types.js';
import type { SqliteStore } from './store.js';

/** A stored result. */
export interface CachedResult {
  readonly rows: Row[];
  /** The query had more rows than its row limit (entries stored before savedq kept this: absent). */
  readonly truncated?: boolean;
  /** When the rows were computed (epoch ms, by the library's clock). */
  readonly computedAt: number;
  /** What the run that computed them cost (entries stored before savedq kept this: absent, and not served). */
  readonly statistics?: QueryStatistics;
}

/** The call behind a cache entry, enough to run it again. */
export interface CachedCall {
  /** The data source the result was read from (Config.source): one file may serve several. */
  readonly source: string;
  /** The saved query's id. */
  readonly query: string;
  /** The digest of the definition the result was computed by. */
  readonly digest: string;
  readonly params: NormalisedParams;
  /** The call's instant as the cache records it (time.ts's storedAsOf: canonical ISO text, '' for now). */
  readonly at: string;
  /** The generation of the source's data it was computed on (warehouse/generation.ts); '' for none. */
  readonly generation?: string;
  /** A caller's SQL over the answer, as the engine formats it (so spacing, case and comments make no new entry). */
  readonly sql?: string;
}

/** A call that someone asked for: the warm set is made of these. */
export interface ServedRecord {
  readonly call: CachedCall;
  /** Last time the result was served (epoch ms). */
  readonly servedAt: number;
  /**
   * When the result last served (or warmed) was computed, so that listing the cache and finding the
   * warm set read these small records, never the results' rows.
   */
  readonly computedAt?: number | undefined;
}

/** A served call, by its cache key. */
export interface CacheEntry extends ServedRecord {
  readonly key: string;
}

/** Entries are kept in SQLite a little longer than they are served, so a slow warm can still see them. */
const RETENTION_MS = 3_600_000;

/**
 * The cache key of a call: the query's id and the digest of its definition, then its data source,
 * normalised parameters, --at, the data's generation and a caller's SQL (when it sent some) as JSON. Kept as text rather than hashed: it is short and exact.
 */
export function cacheKey(call: CachedCall): string {
  const parts = [call.source, Object.entries(call.params), call.at, call.generation ?? ''];
  return `${call.query}:${call.digest}:${JSON.stringify(call.sql === undefined ? parts : [...parts, call.sql])}`;
}

/** The results cache: results and served records (`result:` and `served:` keys) in the SQLite store. */
export class ResultsCache {
  readonly #store: SqliteStore;

  constructor(store: SqliteStore) {
    this.#store = store;
  }

  get file(): string {
    return this.#store.file;
  }

  /** The stored result of a call, if any (fresh or not: the caller judges its age). */
  get(key: string): Promise<CachedResult | undefined> {
    return this.#store.get<CachedResult>(`result:${key}`);
  }

  /** Stores a result. */
  set(key: string, result: CachedResult): Promise<void> {
    return this.#store.set(`result:${key}`, result, RETENTION_MS);
  }

  /** Records that a call was served (which keeps it in the warm set), and when its result was computed. */
  markServed(key: string, record: ServedRecord): Promise<void> {
    return this.#store.set(`served:${key}`, record, RETENTION_MS);
  }

  /** Forgets one call: its result and its served record (a call warmed under a newer key). */
  async forget(key: string): Promise<void> {
    await this.#store.sql('DELETE FROM keyv WHERE key IN (?, ?)', `savedq:result:${key}`, `savedq:served:${key}`);
  }

  /**
   * Every served call, for `cache list` and `warm`: the served records alone are read, never the
   * results' rows. A record of an older savedq (another shape) is left to expire.
   */
  async entries(): Promise<CacheEntry[]> {
    const records = await this.#store.entries<ServedRecord>('served');
    return records.filter(([, record]) => typeof record.call?.query === 'string' && typeof record.call.source === 'string').map(([key, record]) => ({ key, ...record }));
  }

  /**
   * Deletes what is past its retention (results, served records, remembered definitions), then, while
   * the entries take more than `maxBytes`, the least recently served results with their records.
   */
  async prune(maxBytes: number, now = Date.now()): Promise<{ expired: number; evicted: number }> {
    // A value that is not JSON (damaged) can never be read: it goes too.
    const past = "key LIKE 'savedq:%' AND CASE WHEN json_valid(value) THEN json_extract(value, '$.expires') < ? ELSE 1 END";
    const expired = await this.#store.sql<{ n: number }>(`SELECT count(*) AS n FROM keyv WHERE ${past}`, now);
    await this.#store.sql(`DELETE FROM keyv WHERE ${past}`, now);
    let evicted = 0;
    const [size] = await this.#store.sql<{ bytes: number | null }>('SELECT sum(length(key) + length(value)) AS bytes FROM keyv');
    let bytes = size?.bytes ?? 0;
    if (bytes > maxBytes) {
      // Oldest served first; each result goes with its served record.
      const served = await this.#store.sql<{ key: string; bytes: number }>(
        "SELECT substr(s.key, 15) AS key, length(r.value) + length(s.value) AS bytes FROM keyv s LEFT JOIN keyv r ON r.key = 'savedq:result:' || substr(s.key, 15) WHERE s.key LIKE 'savedq:served:%' AND json_valid(s.value) ORDER BY json_extract(s.value, '$.value.servedAt')",
      );
      for (const entry of served) {
        if (bytes <= maxBytes) break;
        await this.#store.sql('DELETE FROM keyv WHERE key IN (?, ?)', `savedq:result:${entry.key}`, `savedq:served:${entry.key}`);
        bytes -= entry.bytes ?? 0;
        evicted += 1;
      }
    }
    return { expired: expired[0]?.n ?? 0, evicted };
  }

  /**
   * Bytes of the file in use (its pages less the free ones): what a run compares with the bound, at the
   * cost of three pragmas. The file's own size never shrinks (SQLite reuses freed pages), so a bound
   * checked against it would prune on every miss once the file had reached it.
   */
  async liveBytes(): Promise<number> {
    const [pages] = await this.#store.sql<{ page_count: number }>('PRAGMA page_count');
    const [free] = await this.#store.sql<{ freelist_count: number }>('PRAGMA freelist_count');
    const [size] = await this.#store.sql<{ page_size: number }>('PRAGMA page_size');
    return ((pages?.page_count ?? 0) - (free?.freelist_count ?? 0)) * (size?.page_size ?? 0);
  }

  /** The cache file's size in bytes (with its journal), for `cache list`. */
  fileBytes(): number {
    const size = (f: string) => {
      try {
        return statSync(f).size;
      } catch {
        return 0; // not there (yet), or not reachable: nothing to prune
      }
    };
    return size(this.file) + size(`${this.file}-wal`);
  }

  /** Removes every entry; returns how many calls were forgotten. */
  async clear(): Promise<number> {
    const n = (await this.entries()).length;
    await this.#store.clear();
    return n;
  }
}
