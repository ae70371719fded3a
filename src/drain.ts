import type { Writable } from 'node:stream';

/**
 * Resolves once a stream whose write asked to wait takes more (true), or has closed or failed (false):
 * standard output, an export's file, an HTTP response, serve's socket to another process.
 */
export function drained(stream: Writable): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => () => {
      stream.off('drain', more);
      stream.off('close', gone);
      stream.off('error', gone);
      resolve(ok);
    };
    const more = done(true);
    const gone = done(false);
    stream.once('drain', more);
    stream.once('close', gone);
    stream.once('error', gone);
  });
}
