import { MAX_API_KEY_BYTES } from '../config.js';
import { nodeCrypto } from '../lazy.js';

/** Keys are compared in buffers of a multiple of this many bytes. */
const KEY_BLOCK = 64;

/**
 * Checks a presented key against every accepted one in constant time, and says which it is (its
 * index) or undefined: both sides in zero-padded buffers of one length, every key compared, so timing
 * says nothing about which key matched or how much of one. The presented key's length is compared in
 * the buffer too (the padding is zeros, which no key holds: a zero at least follows the longest, and
 * a presented key with a zero of its own is wrong).
 *
 * The buffers are as long as the longest accepted key needs, in blocks of KEY_BLOCK bytes, rather than
 * the longest a key may be (MAX_API_KEY_BYTES): every request pays for the comparison, and a cached
 * answer costs little else. That length is the same for every
 * presented key, so it says nothing about a guess; a presented key that does not fit is simply wrong.
 */
export function keyChecker(keys: readonly string[]): (presented: string | undefined) => number | undefined {
  const longest = Math.max(0, ...keys.map((key) => Buffer.byteLength(key)));
  if (longest > MAX_API_KEY_BYTES) throw new Error(`an API key is longer than ${MAX_API_KEY_BYTES} bytes`);
  const size = Math.ceil((longest + 1) / KEY_BLOCK) * KEY_BLOCK;
  const padded = (key: string): Buffer => {
    const buffer = Buffer.alloc(size);
    buffer.write(key, 'utf8');
    return buffer;
  };
  const accepted = keys.map(padded);
  // The presented key is written with room for one more character than a buffer holds: whole when it
  // ends before `size` (a longer one fills past it), so its length needs no counting of its own.
  const room = Buffer.alloc(size + 4);
  const candidate = room.subarray(0, size);
  const { timingSafeEqual } = nodeCrypto();
  return (presented) => {
    if (presented === undefined || presented === '') return undefined;
    const length = room.write(presented, 'utf8');
    candidate.fill(0, Math.min(length, size));
    // Whole, with a zero after it, and no zero of its own (which the padding would match).
    const fits = length < size && !presented.includes('\0');
    let matched = -1;
    for (let i = 0; i < accepted.length; i++) if (timingSafeEqual(accepted[i] as Buffer, candidate)) matched = i;
    return matched >= 0 && fits ? matched : undefined;
  };
}
