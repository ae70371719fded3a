import type { ChunkStream, StreamChunk } from './types.js';

// What every warehouse's streamed answer (an export, types.ts's `stream`) shares: it is handed over once
// its first part is read, and what holds the statement (a lane's count, a timer, a host's query id)
// lets go when the iteration ends, however it ends.

/**
 * The parts of an iterator as a stream, its first part read now: a statement the engine refuses fails
 * here, before any byte is given to anyone. An iteration over the stream that ends early ends the
 * iterator (its `return`), which stops the query.
 */
export async function firstRead(parts: AsyncIterator<StreamChunk>): Promise<ChunkStream> {
  const first = await parts.next();
  let taken = false;
  return {
    [Symbol.asyncIterator]: (): AsyncIterator<StreamChunk> => ({
      next: () => {
        if (taken) return parts.next();
        taken = true;
        return Promise.resolve(first);
      },
      return: async (value?: unknown) => {
        taken = true;
        await parts.return?.(value);
        return { done: true, value: undefined };
      },
    }),
  };
}

/**
 * A stream that tells `onEnd` once when its iteration ends: read whole (no error), failed (the
 * error), or left early (no error, `early` true). What it wraps is left the same way.
 */
export function whenEnded(stream: ChunkStream, onEnd: (outcome: { error?: unknown; early: boolean }) => void): ChunkStream {
  let ended = false;
  const end = (outcome: { error?: unknown; early: boolean }) => {
    if (ended) return;
    ended = true;
    onEnd(outcome);
  };
  return {
    [Symbol.asyncIterator]: (): AsyncIterator<StreamChunk> => {
      const parts = stream[Symbol.asyncIterator]();
      return {
        next: async () => {
          try {
            const part = await parts.next();
            if (part.done === true) end({ early: false });
            return part;
          } catch (error) {
            end({ error, early: false });
            throw error;
          }
        },
        return: async (value?: unknown) => {
          try {
            await parts.return?.(value);
          } finally {
            end({ early: true });
          }
          return { done: true, value: undefined };
        },
      };
    },
  };
}

/** A stream whose failures, after its first part too, are what `convert` makes of them (a savedq error). */
export function failingAs(stream: ChunkStream, convert: (err: unknown) => unknown): ChunkStream {
  return {
    [Symbol.asyncIterator]: (): AsyncIterator<StreamChunk> => {
      const parts = stream[Symbol.asyncIterator]();
      return {
        next: async () => {
          try {
            return await parts.next();
          } catch (err) {
            throw convert(err);
          }
        },
        return: async (value?: unknown) => {
          await parts.return?.(value);
          return { done: true, value: undefined };
        },
      };
    },
  };
}
