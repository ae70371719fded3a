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
