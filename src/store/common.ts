import type Keyv from 'keyv';
import { generationOf, generations, NAMESPACE } from './marks.js';
import { beat, processes, releaseLease, takeFromBucket, takeLease, takeLeaseReading } from './records.js';
import type { SqlSession } from './sql.js';
import { holdsBigInt, jsonText, parseJson } from '../json.js';
import type { Row } from '../queries/types.js';
import { HOST_RECORD_MS, type CachedResult, type GenerationState, type HostRecord, type Lookup, type ServedRecord, type Store, type StoreSignal } from './types.js';

/** What keyv keeps of a call: its result, and its served record. */
export type EntryKind = 'result' | 'served';

/**
 * A result as keyv keeps it: rows holding an integer past 2^53 (a bigint, json.ts), which keyv's JSON
 * cannot write, as their JSON text, every digit kept; other rows as they are.
 */
interface StoredResult extends Omit<CachedResult, 'rows'> {
  readonly rows: Row[];
  readonly rowsJson?: string;
}

function stored(result: CachedResult): StoredResult {
  return holdsBigInt(result.rows) ? { ...result, rows: [], rowsJson: jsonText(result.rows) } : result;
}

function resultOf(kept: StoredResult | undefined): CachedResult | undefined {
  if (kept?.rowsJson === undefined) return kept;
  const { rowsJson, ...result } = kept;
  return { ...result, rows: parseJson(rowsJson) as Row[] };
}

/** How often a process looks at the count of cache clears (and a PostgreSQL store at its LISTEN connection). */
const LOOK_EVERY_MS = 500;

/**
 * What both stores do alike over their own keyv and their own SQL session: the data's generation,
 * leases, rate buckets and the processes sharing the store. Each store says how an operation reaches
 * keyv and its tables, guarded (a store out of use answers the operation's fallback), and how it tells
 * the others (signal).
 */
export abstract class CommonStore {
  /** An operation through keyv, guarded: a store that fails answers `fallback`. */
  protected abstract kv<T>(operation: string, fallback: T, op: (keyv: Keyv) => Promise<T>): Promise<T>;
  /** An operation of savedq's own SQL, guarded the same way. */
  protected abstract sql<T>(operation: string, fallback: T, op: (db: SqlSession) => Promise<T>): Promise<T>;
  abstract signal(what: StoreSignal): Promise<void>;
  /** Where keyv keeps a call's result or served record (below the namespace). */
  protected abstract entryKey(kind: EntryKind, key: string): string;

  getResult(key: string): Promise<CachedResult | undefined> {
    return this.kv('get', undefined, async (keyv) => resultOf(await keyv.get<StoredResult>(this.entryKey('result', key))));
  }

  /** A call's result and when its served record was written, in one read. */
  lookup(key: string): Promise<Lookup> {
    return this.kv('get', { result: undefined, servedAt: undefined }, async (keyv) => {
      const [result, served] = await keyv.getMany<StoredResult | ServedRecord>([this.entryKey('result', key), this.entryKey('served', key)]);
      return { result: resultOf(result as StoredResult | undefined), servedAt: (served as ServedRecord | undefined)?.servedAt };
    });
  }

  async setResult(key: string, result: CachedResult, ttlMs: number): Promise<void> {
    await this.kv('set', undefined, async (keyv) => {
      await keyv.set(this.entryKey('result', key), stored(result), ttlMs);
    });
  }

  async markServed(key: string, record: ServedRecord, ttlMs: number): Promise<void> {
    await this.kv('served', undefined, async (keyv) => {
      await keyv.set(this.entryKey('served', key), record, ttlMs);
    });
  }

  generation(source: string): Promise<GenerationState> {
    return this.kv('generation', generationOf(undefined, 0), (keyv) => generations.read(keyv, source));
  }

  async changing(source: string, owner: string, ms: number): Promise<void> {
    await this.kv('generation', undefined, (keyv) => generations.changing(keyv, source, owner, ms));
  }

  async changed(source: string): Promise<void> {
    await this.kv('generation', undefined, (keyv) => generations.changed(keyv, source));
    await this.signal({ kind: 'generation', source });
  }

  lease(name: string, owner: string, ms: number): Promise<boolean> {
    // A store out of use leases nothing to anyone: each process computes its own answers.
    return this.sql('lease', true, (db) => takeLease(db, name, owner, ms));
  }

  async leaseReading(name: string, owner: string, ms: number, key: string): Promise<{ taken: boolean; result?: CachedResult }> {
    // A store out of use leases nothing to anyone, and has nothing stored.
    const read = await this.sql('lease', { value: null }, (db) => takeLeaseReading(db, name, owner, ms, `${NAMESPACE}:${this.entryKey('result', key)}`));
    if (read === undefined) return { taken: false };
    if (read.value === null) return { taken: true };
    const text = read.value;
    const result = await this.kv('get', undefined, async (keyv) => {
      const data = await keyv.deserializeData<StoredResult>(text);
      return data && (typeof data.expires !== 'number' || data.expires > Date.now()) ? resultOf(data.value) : undefined;
    });
    return result === undefined ? { taken: true } : { taken: true, result };
  }

  async release(name: string, owner: string): Promise<void> {
    await this.sql('lease', undefined, (db) => releaseLease(db, name, owner));
  }

  hostsDown(hosts: readonly string[]): Promise<Map<string, HostRecord>> {
    if (hosts.length === 0) return Promise.resolve(new Map<string, HostRecord>());
    return this.kv('hosts', new Map<string, HostRecord>(), async (keyv) => {
      const records = await keyv.getMany<HostRecord>(hosts.map((host) => `host:${host}`));
      const found = new Map<string, HostRecord>();
      hosts.forEach((host, i) => {
        const record = records[i];
        if (record !== undefined) found.set(host, record);
      });
      return found;
    });
  }

  async markHost(host: string, down: HostRecord | undefined): Promise<void> {
    await this.kv('hosts', undefined, async (keyv) => {
      if (down === undefined) await keyv.delete(`host:${host}`);
      else await keyv.set(`host:${host}`, down, HOST_RECORD_MS);
    });
  }

  takeFromBucket(bucket: string, used: number, perSecond: number, burst: number): ReturnType<Store['takeFromBucket']> {
    return this.sql('bucket', undefined, (db) => takeFromBucket(db, bucket, used, perSecond, burst));
  }

  async beat(process: Parameters<Store['beat']>[0]): Promise<void> {
    await this.sql('beat', undefined, (db) => beat(db, process));
  }

  processes(since: number): ReturnType<Store['processes']> {
    return this.sql('processes', [], (db) => processes(db, since));
  }

  /**
   * Looks at the count of cache clears every LOOK_EVERY_MS, and tells `onSignal` when it changed since
   * the last look: the first clear of a store too (none counted is 0). A look the store did not answer
   * tells nothing. `eachLook` runs first at every look. Returns how to stop.
   */
  protected watchClears(onSignal: (what: StoreSignal) => void, eachLook?: () => void): () => void {
    let seen: number | undefined;
    let looking = false;
    const look = async () => {
      if (looking) return;
      looking = true;
      try {
        eachLook?.();
        const count = await this.kv('signal', null, async (keyv) => (await keyv.get<number>('signal:cleared')) ?? 0);
        if (count === null) return;
        if (seen !== undefined && count !== seen) onSignal({ kind: 'cleared' });
        seen = count;
      } finally {
        looking = false;
      }
    };
    void look();
    const timer = setInterval(() => void look(), LOOK_EVERY_MS);
    timer.unref();
    return () => clearInterval(timer);
  }
}
