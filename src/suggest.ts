import { createRequire } from 'node:module';
import { packageRoot } from './package.js';

type Levenshtein = typeof import('fastest-levenshtein');

/** Loaded on first use: suggestions are only ever needed on the error path, never on a cache hit. */
let levenshtein: Levenshtein | undefined;

/**
 * The candidate closest to `input`, when it is close enough to be a likely typo of it, or one it is the
 * start of: the only one, however short (`f` for format), else the shortest once it has 3 characters
 * (`int` for integer). Close enough: one edit, or at most 2 (a third of a long name) and under 60 % of
 * the longer of the two (commander's own rule for its guesses), so that short words with little in
 * common (`x` and `at`, `cah` and `at`) are not guessed.
 */
export function closest(input: string, candidates: readonly string[]): string | undefined {
  if (candidates.length === 0) return undefined;
  const lower = input.toLowerCase();
  if (lower === '') return undefined;
  const starting = candidates.filter((c) => c.toLowerCase().startsWith(lower)).sort((a, b) => a.length - b.length);
  // One that differs in case only is the one meant; else the one it starts, or the shortest of several.
  if (starting.length === 1 || (lower.length >= 3 && starting.length > 0) || starting[0]?.toLowerCase() === lower) return starting[0];
  // Two letters typed the wrong way round (`rnu`) are one slip, which Levenshtein counts as two edits.
  const swapped = candidates.find((c) => isSwap(lower, c.toLowerCase()));
  if (swapped !== undefined) return swapped;
  levenshtein ??= createRequire(packageRoot)('fastest-levenshtein') as Levenshtein;
  const best = levenshtein.closest(input.toLowerCase(), candidates.map((c) => c.toLowerCase()));
  const d = levenshtein.distance(input.toLowerCase(), best);
  const original = candidates.find((c) => c.toLowerCase() === best);
  return d <= 1 || (d <= Math.max(2, Math.floor(best.length / 3)) && d < 0.6 * Math.max(lower.length, best.length)) ? original : undefined;
}

/** Whether `a` is `b` with two neighbouring characters exchanged. */
function isSwap(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let at = 0;
  while (at < a.length && a[at] === b[at]) at += 1;
  return at < a.length - 1 && a[at] === b[at + 1] && a[at + 1] === b[at] && a.slice(at + 2) === b.slice(at + 2);
}
