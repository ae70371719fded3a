import { closest as closestByDistance, distance } from 'fastest-levenshtein';

/** The candidate closest to `input`, when it is close enough to be a likely typo of it. */
export function closest(input: string, candidates: readonly string[]): string | undefined {
  if (candidates.length === 0) return undefined;
  const best = closestByDistance(input.toLowerCase(), candidates.map((c) => c.toLowerCase()));
  const d = distance(input.toLowerCase(), best);
  const original = candidates.find((c) => c.toLowerCase() === best);
  return d <= Math.max(2, Math.floor(best.length / 3)) ? original : undefined;
}
