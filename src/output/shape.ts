import type { Row } from '../queries/types.js';
import type { TableField } from './types.js';

/** An instant as savedq's rows carry one: ISO 8601 in UTC. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * What a result can be drawn as: a time series (numbers over a timestamp or date field, one row an
 * instant), bars (numbers by one text field, one row a value), or nothing, with why. One rule for
 * `run -f chart` and serve's page, which bundles this module into its script (so it imports only types).
 */
export type ChartShape =
  | { readonly kind: 'series'; readonly time: TableField; readonly numeric: readonly TableField[] }
  | { readonly kind: 'bars'; readonly label: TableField; readonly numeric: readonly TableField[] }
  | { readonly kind: 'none'; readonly why: string };

/** What a chart needs, said when a result is not one. */
const NEEDS = 'a chart needs numbers over a timestamp or date field (a time series: one row an instant) or numbers by one text field (bars: one row a value)';

const isTimeField = (f: TableField, rows: readonly Row[]) =>
  f.type === 'timestamp' || f.type === 'date' || rows.every((r) => typeof r[f.name] === 'string' && (ISO_INSTANT.test(r[f.name] as string) || ISO_DATE.test(r[f.name] as string)));
const isNumericField = (f: TableField, rows: readonly Row[]) =>
  f.type === 'integer' || f.type === 'number' || rows.every((r) => typeof r[f.name] === 'number' || typeof r[f.name] === 'bigint' || r[f.name] === null);
const distinct = (rows: readonly Row[], name: string) => new Set(rows.map((r) => r[name])).size === rows.length;
const list = (fields: readonly TableField[]) => fields.map((f) => f.name).join(', ');

/** The shape of rows with these fields (declared, or typed by their values). */
export function chartShape(rows: readonly Row[], fields: readonly TableField[]): ChartShape {
  if (rows.length === 0) return { kind: 'none', why: 'the query returned no rows.' };
  const times = fields.filter((f) => isTimeField(f, rows));
  const numeric = fields.filter((f) => !times.includes(f) && isNumericField(f, rows));
  if (numeric.length === 0) return { kind: 'none', why: `no numeric field among ${list(fields)}; ${NEEDS}.` };
  const time = times.find((f) => rows.every((r) => typeof r[f.name] === 'string') && distinct(rows, f.name));
  const texts = fields.filter((f) => f.type === 'string' && !times.includes(f));
  const label = texts.length === 1 && distinct(rows, texts[0]?.name ?? '') ? texts[0] : undefined;
  // Both shapes (a path, its error count, when it was last seen): the field that comes first says what the rows are of.
  const index = (f: TableField | undefined) => (f ? fields.indexOf(f) : Infinity);
  if (time && index(time) < index(label)) return { kind: 'series', time, numeric };
  if (label) return { kind: 'bars', label, numeric };
  const why = [
    times.length > 0 ? `several rows share a value of ${list(times)}` : 'no timestamp or date field',
    texts.length === 1 ? `several rows share a value of ${list(texts)}` : `${texts.length === 0 ? 'no' : texts.length} text fields${texts.length > 1 ? ` (${list(texts)})` : ''}`,
  ];
  return { kind: 'none', why: `${why.join(', and ')}; ${NEEDS}.` };
}

/**
 * The columns of rows whose fields are not declared: the first row's, typed by their values (so
 * numbers are right-aligned in a table, and instants are a chart's time).
 */
export function fieldsOfRows(rows: readonly Row[]): TableField[] {
  return Object.entries(rows[0] ?? {}).map(([name, value]) => ({ name, type: typeOfValue(value) }));
}

function typeOfValue(value: unknown): TableField['type'] {
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  // A 64-bit integer past 2^53 (json.ts).
  if (typeof value === 'bigint') return 'integer';
  if (typeof value === 'string' && ISO_INSTANT.test(value)) return 'timestamp';
  if (typeof value === 'object' && value !== null) return 'object';
  return 'string';
}

/**
 * The step between a series' buckets (ms), when every instant is a whole number of the smallest step
 * from the first: a bucket between them with no row is then known to be missing. Undefined when the
 * instants keep no one step (months, say), or there are too few to tell.
 */
export function bucketStep(instants: readonly number[]): number | undefined {
  const steps = instants.slice(1).map((t, i) => t - (instants[i] as number));
  const step = Math.min(...steps);
  if (steps.length === 0 || !(step > 0) || steps.some((s) => s % step !== 0)) return undefined;
  return ((instants.at(-1) as number) - (instants[0] as number)) / step < MAX_BUCKETS ? step : undefined;
}
/** A series longer than this many buckets is drawn row by row. */
const MAX_BUCKETS = 100_000;
