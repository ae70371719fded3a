/**
 * A Map of at most `maxEntries` keys: setting a key makes it the newest, and past the bound the oldest
 * goes. What savedq remembers of what callers send (tokens, calls, SQL, patterns) is kept in these, so
 * no caller can grow a process's memory without end.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(private readonly maxEntries: number) {
    super();
  }

  override set(key: K, value: V): this {
    super.delete(key);
    super.set(key, value);
    if (this.size > this.maxEntries) super.delete(this.keys().next().value as K);
    return this;
  }
}

/**
 * A cache of at most `maxEntries` keys and `maxSize` of their values' sizes (`sizeOf`, counted once as
 * each is kept): past either, the least recently used go first, a read making an entry the most recent.
 * A value whose size alone is past `maxSize` is not kept. (lru-cache does this too, but reads the
 * global `performance` as it loads, which loads Node's perf_hooks: 1.5 ms of every cache hit of `run`.)
 */
export class SizedCache<K, V> {
  readonly #entries = new Map<K, { readonly value: V; readonly size: number }>();
  #size = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxSize: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  /** The sizes of the values kept, together. */
  get size(): number {
    return this.#size;
  }

  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  set(key: K, value: V): void {
    this.delete(key);
    const size = Math.max(1, this.sizeOf(value));
    if (size > this.maxSize) return;
    this.#entries.set(key, { value, size });
    this.#size += size;
    while (this.#entries.size > this.maxEntries || this.#size > this.maxSize) {
      const [oldest] = this.#entries.keys();
      this.delete(oldest as K);
    }
  }

  delete(key: K): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#size -= entry.size;
  }

  clear(): void {
    this.#entries.clear();
    this.#size = 0;
  }
}
