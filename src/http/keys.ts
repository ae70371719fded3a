import { timingSafeEqual } from 'node:crypto';

/** Keys are compared in a buffer of this many bytes; a longer presented key is simply wrong. */
const KEY_BYTES = 512;

/** Text in a zero-padded buffer of KEY_BYTES, or undefined when it does not fit. */
function padded(text: string): Buffer | undefined {
  const buffer = Buffer.alloc(KEY_BYTES);
  const written = buffer.write(text, 'utf8');
  return Buffer.byteLength(text) === written && written < KEY_BYTES ? buffer : undefined;
}

/**
 * Checks a presented key against every accepted one in constant time: both sides in buffers of one
 * length, every key compared, so timing says nothing about which key matched or how much of one. The
 * presented key's length is compared in the buffer too (the padding is zeros, which no key holds).
 */
export function keyChecker(keys: readonly string[]): (presented: string | undefined) => boolean {
  const accepted = keys.map(padded).filter((k): k is Buffer => k !== undefined);
  const candidate = Buffer.alloc(KEY_BYTES);
  return (presented) => {
    if (presented === undefined || presented === '') return false;
    candidate.fill(0);
    const written = candidate.write(presented, 'utf8');
    const fits = written === Buffer.byteLength(presented) && written < KEY_BYTES;
    let ok = false;
    for (const key of accepted) ok = timingSafeEqual(key, candidate) || ok;
    return ok && fits;
  };
}
