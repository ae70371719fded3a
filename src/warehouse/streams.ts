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
 * error), or left early (no error, `early` true). Leaving it early leaves what it wraps (`for await`
 * closes the iterator it reads).
 */
export async function* whenEnded(stream: ChunkStream, onEnd: (outcome: { error?: unknown; early: boolean }) => void): ChunkStream {
  let outcome: { error?: unknown; early: boolean } = { early: true };
  try {
    for await (const part of stream) yield part;
    outcome = { early: false };
  } catch (error) {
    outcome = { error, early: false };
    throw error;
  } finally {
    onEnd(outcome);
  }
}

/** A stream whose failures, after its first part too, are what `convert` makes of them (a savedq error). */
export async function* failingAs(stream: ChunkStream, convert: (err: unknown) => unknown): ChunkStream {
  try {
    yield* stream;
  } catch (err) {
    throw convert(err);
  }
}
