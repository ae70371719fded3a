// How a table shows each column's values, for a terminal (table.ts, which escapes control characters)
// and for serve's page (which bundles this module, so it imports nothing).

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** How a table shows a column's values: as they are, or shortened to fit (numbers rounded to a precision that still tells them apart). */
export type Shown = 'whole' | 'rounded';

/**
 * The texts of a column's cells. Instants in UTC to the column's unit (a day, a minute, as given), with
 * their zone; decimals the same in every cell of a column: at most 2 (3 significant digits below 1),
 * and, `rounded`, fewer the larger the numbers (none from 100). Objects and arrays as `json` writes them
 * (a terminal's rows may hold a 64-bit integer past 2^53, which JSON.stringify cannot write).
 */
export function columnTexts(values: readonly unknown[], type: string, shown: Shown, middle?: number, json: (value: unknown) => string = JSON.stringify): string[] {
  const otherText = (value: unknown): string => (value === null || value === undefined ? '' : typeof value === 'object' ? json(value) : String(value));
  if (type === 'timestamp') {
    const isInstant = (v: unknown): v is string => typeof v === 'string' && ISO_INSTANT.test(v);
    const instants = values.filter(isInstant);
    const unit = instants.every((v) => /T00:00:00(\.0+)?Z$/.test(v)) ? 10 : instants.every((v) => /:00(\.0+)?Z$/.test(v)) ? 16 : undefined;
    return values.map((v) => (!isInstant(v) ? otherText(v) : unit === 10 ? v.slice(0, 10) : `${v.replace('T', ' ').slice(0, -1).slice(0, unit)}Z`));
  }
  if (type !== 'number') return values.map(otherText);
  const numbers = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (numbers.length === 0) return values.map(otherText);
  const places = (v: number) => (Math.abs(v) >= 1 || v === 0 ? 2 : Math.min(6, 2 - Math.floor(Math.log10(Math.abs(v)))));
  const given = (v: number) => (Number.isInteger(v) ? 0 : Math.min(places(v), String(v).split('.')[1]?.length ?? 0));
  let decimals = Math.max(...numbers.map(given));
  if (shown === 'rounded') {
    const size = middle ?? middleOf(numbers);
    decimals = Math.min(decimals, size >= 100 ? 0 : size >= 10 ? 1 : decimals);
  }
  return values.map((v) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(decimals) : otherText(v)));
}

/**
 * The size of the middle number, which a rounded column's decimals follow (`rounded`: none from 100,
 * one from 10). Columns compared within a row (a minimum, an average, a maximum) are given the middle
 * of all their numbers, so that each is rounded alike and a row's minimum never shows above its maximum.
 */
export function middleOf(numbers: readonly number[]): number {
  return Math.abs([...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)] ?? 0);
}

