import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { InputError } from '../errors.js';

/** API keys for `serve`: from --api-key-file (one a line) or SAVEDQ_API_KEYS (comma-separated). */
export function loadApiKeys(file: string | undefined, env: Readonly<Record<string, string | undefined>>): string[] {
  let text: string;
  if (file !== undefined) {
    try {
      // A pipe or a device would hold the read (and the server's start) forever.
      if (!statSync(file).isFile()) throw Object.assign(new Error('not a regular file'), { code: 'not a regular file' });
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new InputError(`cannot read API key file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}.`);
    }
  } else {
    text = (env.SAVEDQ_API_KEYS ?? '').replace(/,/g, '\n');
  }
  const keys = text
    .split('\n')
    .map((k) => k.trim())
    .filter((k) => k !== '' && !k.startsWith('#'));
  if (keys.length === 0) {
    throw new InputError('serve needs at least one API key: set SAVEDQ_API_KEYS or give --api-key-file.');
  }
  return keys;
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/**
 * Checks a presented key against every accepted one in constant time: both sides are hashed to the same
 * length first, and every key is compared, so timing says nothing about which key or how much matched.
 */
export function keyChecker(keys: readonly string[]): (presented: string | undefined) => boolean {
  const accepted = keys.map(digest);
  return (presented) => {
    const candidate = digest(presented ?? '');
    let ok = false;
    for (const key of accepted) ok = timingSafeEqual(key, candidate) || ok;
    return ok && presented !== undefined && presented !== '';
  };
}
