// How savedq says a count in a sentence, the same everywhere it says one.

/** `1 row`, `3 rows`: a count and its noun, plural when it is not one. */
export function plural(n: number | string, noun: string, count = Number(n)): string {
  return `${n} ${noun}${count === 1 ? '' : 's'}`;
}

/** `1,204,332 rows`: a large count grouped in thousands, as a person reads it. */
export function grouped(n: number, noun: string): string {
  return plural(n.toLocaleString('en-US'), noun, n);
}
