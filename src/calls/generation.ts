import type { Store } from '../store/types.js';
import { beginLoad, GenerationWatch, newGeneration, readGenerationState } from '../warehouse/generation.js';
import type { GenerationState } from '../store/types.js';

export type { GenerationState } from '../store/types.js';

/** A load into a server marks its data loading for this long, renewed while it runs. */
const LOAD_MARK_MS = 15_000;

/**
 * The generation of the data a library reads (docs/caching.md): every cache key carries it, a load
 * changes it, and while a load runs nothing computed is kept. One of two kinds, picked once: an
 * embedded data directory's (a file in it, which serve watches), or a server's (in the store, which
 * every process sharing it reads).
 */
export interface DataGeneration {
  /** The state as last read: what a call being prepared is keyed by (no I/O on serve's hot path). */
  current(): GenerationState;
  /** The state read now: before a call is prepared, and once an answer is in (a load may have begun meanwhile). */
  fresh(): Promise<GenerationState>;
  /**
   * Keeps `current` fresh for a process that lives long (serve): a server's generation read from the
   * store every half second and at once on a signal. Returns how to stop.
   */
  watch(): () => void;
  /**
   * Runs a change of the data: marked loading as it starts (once `started` says the change has begun),
   * so that answers from before are still served while it runs and none computed meanwhile is kept; a
   * new generation when it ends, whole or not, so that nothing computed before or during it is served after.
   */
  changing<T>(started: Promise<unknown>, change: () => Promise<T>): Promise<T>;
  close(): void;
}

/** An embedded data directory's generation: its file, read on each call, or watched (serve). */
export function embeddedGeneration(dataDir: string, watched: boolean): DataGeneration {
  const watch = watched ? new GenerationWatch(dataDir) : undefined;
  const current = () => (watch ? watch.current() : readGenerationState(dataDir));
  return {
    current,
    fresh: async () => current(),
    watch: () => () => undefined,
    async changing(started, change) {
      // Marked once the directory is this process's (the engine opened): a wait for it changes nothing.
      const marked = started.then(() => beginLoad(dataDir)).then(() => true, () => false);
      try {
        return await change();
      } finally {
        if (await marked) newGeneration(dataDir);
      }
    },
    close: () => watch?.close(),
  };
}

/** A server's generation, as loads through savedq set it in the store every process sharing it reads. */
export function serverGeneration(store: Store, source: string, owner: string): DataGeneration {
  let known: GenerationState = { current: '', loading: false };
  let watching = false;
  /** The store's answer; a watch keeps the last one it had while the store does not answer. */
  const read = async (keepWhenDown: boolean) => {
    const data = await store.generation(source);
    if (store.up || !keepWhenDown) known = data;
    return known;
  };
  return {
    current: () => known,
    // Asked of the store each time, unless serve's watch keeps it fresh.
    fresh: () => (watching ? Promise.resolve(known) : read(false)),
    watch() {
      watching = true;
      void read(true);
      const timer = setInterval(() => void read(true), 500);
      timer.unref();
      const stopListening = store.listen((what) => {
        if (what.kind === 'generation' && what.source === source) void read(true);
      });
      return () => {
        clearInterval(timer);
        stopListening();
        watching = false;
      };
    },
    async changing(_started, change) {
      // Renewed, so that a load whose process dies is a change of the data a moment later.
      await store.changing(source, owner, LOAD_MARK_MS);
      const renew = setInterval(() => void store.changing(source, owner, LOAD_MARK_MS), LOAD_MARK_MS / 3);
      renew.unref();
      try {
        return await change();
      } finally {
        clearInterval(renew);
        await store.changed(source);
      }
    },
    close: () => undefined,
  };
}
