import { errnoText } from '../errno.js';
import { SavedqError } from '../errors.js';

/**
 * Where a store's warnings go: the surface that made the library decides (standard error, serve's log).
 * A store that answers again says so as news (`back`), not as a warning.
 */
export type Warn = (message: string, kind?: 'back') => void;

/** How a store's failures are taken. */
export interface HealthOptions {
  /** Says why the store failed, in a sentence (the store's, naming where it is). */
  readonly failed: (reason: string) => string;
  /** Said when a store that failed answers again. */
  readonly back?: (() => string) | undefined;
  /**
   * Asked again this long after a failure; undefined: never again in this process (a file that is not
   * usable does not become so while it runs).
   */
  readonly retryMs?: number | undefined;
  /** An operation that takes longer has failed (a store slower than this is as good as gone). */
  readonly deadlineMs?: number | undefined;
  /** The warning is said again at most this often while the store stays down. */
  readonly warnEveryMs?: number | undefined;
}

/**
 * Whether a store answers, and each of its operations run so: one that fails (or passes its deadline)
 * answers its fallback instead and the store is down, said in one warning (again at most once a
 * minute), until an operation is tried again and answers. An error of savedq's own (a refusal that
 * names what to fix) is no failure of the store's: it is thrown.
 */
export class StoreHealth {
  #up = true;
  #retryAt = 0;
  #warnedAt = -Infinity;
  readonly #warn: Warn;
  readonly #options: HealthOptions;
  readonly #observers = new Set<(operation: string, seconds: number, up: boolean) => void>();

  constructor(warn: Warn, options: HealthOptions) {
    this.#warn = warn;
    this.#options = options;
  }

  get up(): boolean {
    return this.#up;
  }

  observe(listener: (operation: string, seconds: number, up: boolean) => void): () => void {
    this.#observers.add(listener);
    return () => this.#observers.delete(listener);
  }

  /** Operations under way: a store closes once they are done, so that none finds it closed under it. */
  readonly #underway = new Set<Promise<unknown>>();

  /** Waits for the operations under way to end. */
  async settled(): Promise<void> {
    while (this.#underway.size > 0) await Promise.allSettled([...this.#underway]);
  }

  /** Runs an operation, or answers `fallback` when the store is down and not yet to be tried again. */
  run<T>(operation: string, fallback: T, work: () => Promise<T>): Promise<T> {
    const running = this.#run(operation, fallback, work);
    this.#underway.add(running);
    void running.finally(() => this.#underway.delete(running)).catch(() => undefined);
    return running;
  }

  async #run<T>(operation: string, fallback: T, work: () => Promise<T>): Promise<T> {
    if (!this.#up && (this.#options.retryMs === undefined || Date.now() < this.#retryAt)) return fallback;
    // Timed only for an observer (serve's metrics): a run's first performance.now() loads perf_hooks.
    const started = this.#observers.size > 0 ? performance.now() : undefined;
    try {
      const value = this.#options.deadlineMs === undefined ? await work() : await withDeadline(work(), this.#options.deadlineMs);
      if (!this.#up) {
        this.#up = true;
        const back = this.#options.back?.();
        if (back) this.#warn(back, 'back');
      }
      this.#tell(operation, started);
      return value;
    } catch (err) {
      if (err instanceof SavedqError && !(err instanceof StoreUnreachable)) throw err;
      this.#down(err);
      this.#tell(operation, started);
      return fallback;
    }
  }

  #down(err: unknown): void {
    const now = Date.now();
    this.#up = false;
    this.#retryAt = now + (this.#options.retryMs ?? 0);
    // The first failure is always said (now - -Infinity is Infinity); again only after warnEveryMs.
    if (now - this.#warnedAt >= (this.#options.warnEveryMs ?? Infinity)) {
      this.#warnedAt = now;
      this.#warn(this.#options.failed(reasonOf(err)));
    }
  }

  #tell(operation: string, started: number | undefined): void {
    if (started === undefined) return;
    const seconds = (performance.now() - started) / 1000;
    for (const observer of this.#observers) observer(operation, seconds, this.#up);
  }
}

/** A store that did not answer in time, or could not be reached: what its operations fail with. */
export class StoreUnreachable extends SavedqError {}

/** `work`, or a StoreUnreachable once `ms` have passed without its answer. */
export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnreachable(`no answer in ${ms / 1000} s`)), ms);
    timer.unref();
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** Why a store failed, in a few words: savedq's own message, a system's error in words, or the store's without its code. */
export function reasonOf(err: unknown): string {
  if (err instanceof SavedqError) return err.message.replace(/\.$/, '');
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return errnoText(err);
  return err instanceof Error ? err.message.replace(/^SQLITE_\w+:\s*/, '') : String(err);
}
