// How savedq says a count in a sentence, the same everywhere it says one.

/** `1 row`, `3 rows`: a count and its noun, plural when it is not one. */
export function plural(n: number | string, noun: string, count = Number(n)): string {
  return `${n} ${noun}${count === 1 ? '' : 's'}`;
}

/** `1,204,332 rows`: a large count grouped in thousands, as a person reads it. */
export function grouped(n: number, noun: string): string {
  return plural(n.toLocaleString('en-US'), noun, n);
}

/** Bytes as a person reads them: 512 B, 12.3 kB, 61.2 MB, 1.4 GB (powers of 1000, as the engine's own summaries). */
export function bytesText(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}
