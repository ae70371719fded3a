import { createRequire } from 'node:module';
import { packageRoot } from './package.js';

type Levenshtein = typeof import('fastest-levenshtein');

/** Loaded on first use: suggestions are only ever needed on the error path, never on a cache hit. */
let levenshtein: Levenshtein | undefined;

/**
 * The candidate closest to `input`, when it is close enough to be a likely typo of it, or one it is the
 * start of (`int` for integer).
 */
export function closest(input: string, candidates: readonly string[]): string | undefined {
  if (candidates.length === 0) return undefined;
  const lower = input.toLowerCase();
  if (lower.length >= 3) {
    const prefixed = candidates.filter((c) => c.toLowerCase().startsWith(lower)).sort((a, b) => a.length - b.length)[0];
    if (prefixed !== undefined && prefixed.toLowerCase() !== lower) return prefixed;
  }
  levenshtein ??= createRequire(packageRoot)('fastest-levenshtein') as Levenshtein;
  const best = levenshtein.closest(input.toLowerCase(), candidates.map((c) => c.toLowerCase()));
  const d = levenshtein.distance(input.toLowerCase(), best);
  const original = candidates.find((c) => c.toLowerCase() === best);
  return d <= Math.max(2, Math.floor(best.length / 3)) ? original : undefined;
}
