import { timingSafeEqual } from 'node:crypto';
import { MAX_API_KEY_BYTES } from '../config.js';

/** Keys are compared in a buffer of this many bytes (a zero at least after each); a longer presented key is simply wrong. */
const KEY_BYTES = MAX_API_KEY_BYTES + 1;

/** A key in a zero-padded buffer of KEY_BYTES (the configuration refuses a key too long for one). */
function padded(key: string): Buffer {
  if (Buffer.byteLength(key) > MAX_API_KEY_BYTES) throw new Error(`an API key is longer than ${MAX_API_KEY_BYTES} bytes`);
  const buffer = Buffer.alloc(KEY_BYTES);
  buffer.write(key, 'utf8');
  return buffer;
}

/**
 * Checks a presented key against every accepted one in constant time, and says which it is (its
 * index) or undefined: both sides in buffers of one
 * length, every key compared, so timing says nothing about which key matched or how much of one. The
 * presented key's length is compared in the buffer too (the padding is zeros, which no key holds).
 */
export function keyChecker(keys: readonly string[]): (presented: string | undefined) => number | undefined {
  const accepted = keys.map(padded);
  const candidate = Buffer.alloc(KEY_BYTES);
  return (presented) => {
    if (presented === undefined || presented === '') return undefined;
    candidate.fill(0);
    const written = candidate.write(presented, 'utf8');
    const fits = written === Buffer.byteLength(presented) && written < KEY_BYTES;
    let matched = -1;
    for (const [i, key] of accepted.entries()) if (timingSafeEqual(key, candidate)) matched = i;
    return matched >= 0 && fits ? matched : undefined;
  };
}
