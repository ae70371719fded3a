// How savedq says a count in a sentence, the same everywhere it says one.

/** `1 row`, `3 rows`: a count and its noun, plural when it is not one. */
export function plural(n: number | string, noun: string, count = Number(n)): string {
  return `${n} ${noun}${count === 1 ? '' : 's'}`;
}
