import asciichart from 'asciichart';
import { Chalk } from 'chalk';
import stringWidth from 'string-width';
import { InputError } from '../errors.js';
import type { Row } from '../queries/types.js';
import { bucketStep, chartShape } from './shape.js';
import { visible, type RenderOptions, type TableField } from './types.js';

/** Lines of each line chart's plot. */
const PLOT_HEIGHT = 8;
/** The share of the width a bar's label may take; a longer label is shortened with '…'. */
const MAX_LABEL_SHARE = 0.4;
/** Lines of the series, one colour a chart in turn (colour only on a terminal, as tables). */
const SERIES_COLORS = [asciichart.cyan, asciichart.green, asciichart.yellow, asciichart.magenta, asciichart.blue, asciichart.red];
/** Eighths of a block, for a bar's last character. */
const EIGHTHS = ['', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];

type Paint = InstanceType<typeof Chalk>;

/**
 * A result as pictures for a terminal: a time series as one line chart per numeric field, stacked;
 * one text field and numbers as horizontal bars; anything else an InputError saying what a chart
 * needs. Lines are drawn by asciichart; savedq fits the series to the width (a bucket a column,
 * stretched when few, the highest of several buckets a column when many), leaves a gap where a bucket
 * has no row, and labels it.
 */
export function renderChart(given: readonly Row[], options: RenderOptions): string {
  // A chart draws a 64-bit integer past 2^53 (a bigint) as near as a double gets.
  const rows = given.map((row) => (Object.values(row).some((v) => typeof v === 'bigint') ? Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])) : row));
  const width = Math.max(options.width ?? 80, 20);
  const paint = new Chalk({ level: options.color ? 1 : 0 });
  const shape = chartShape(rows, options.fields);
  if (shape.kind === 'series') return lineCharts(rows, shape.time, shape.numeric, width, paint, options.color);
  if (shape.kind === 'bars') return barCharts(rows, shape.label, shape.numeric, width, paint);
  throw new InputError(`nothing to chart: ${shape.why}`);
}

/** A number as an axis label or a heading shows it: whole, or to at most 2 decimals, large ones short. */
function numberText(value: number): string {
  if (Math.abs(value) >= 1e6) return new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 }).format(value);
  return new Intl.NumberFormat('en', { maximumFractionDigits: Math.abs(value) >= 100 || Number.isInteger(value) ? 0 : 2, useGrouping: false }).format(value);
}

/** A vertical axis: its lowest and highest value, its rows (lines of the plot less one), and its labels. */
interface Axis {
  readonly low: number;
  readonly high: number;
  readonly rows: number;
  readonly label: (value: number) => string;
}

/**
 * The vertical axis of values from `low` to `high`. Whole numbers (counts) get whole steps, so every
 * label is a whole number a step from the next; the top is the highest value, unless that puts the
 * bottom below zero for values that are not. Others get the plot's height in equal steps.
 */
function axisOf(low: number, high: number, integers: boolean): Axis {
  if (integers) {
    const step = Math.max(1, Math.ceil((high - low) / PLOT_HEIGHT));
    const rows = Math.max(1, Math.ceil((high - low) / step));
    const bottom = high - rows * step < 0 && low >= 0 ? 0 : high - rows * step;
    return { low: bottom, high: bottom + rows * step, rows, label: Math.max(Math.abs(low), Math.abs(high)) >= 1e6 ? numberText : (v) => v.toFixed(0) };
  }
  const flat = high === low;
  const top = flat ? high + Math.max(Math.abs(high) / 10, 0.01) : high;
  const step = (top - low) / (flat ? 1 : PLOT_HEIGHT);
  const decimals = step >= 1 ? 0 : Math.min(4, Math.ceil(-Math.log10(step)));
  return { low, high: top, rows: flat ? 1 : PLOT_HEIGHT, label: Math.max(Math.abs(low), Math.abs(high)) >= 1e6 ? numberText : (v) => v.toFixed(decimals) };
}

/** An instant as the time axis shows it: to the bucket's unit when the step is known (a day, a minute), else to the second. */
function timeText(value: string, step: number | undefined): string {
  const text = value.replace('T', ' ').replace(/(\.\d+)?Z$/, '');
  if (step !== undefined && step % 86_400_000 === 0) return visible(text.slice(0, 10));
  return visible(step !== undefined && step % 60_000 === 0 ? text.slice(0, 16) : text);
}

/** A text cut to `width` columns with '…' when longer. */
function fit(text: string, width: number): string {
  if (stringWidth(text) <= width) return text;
  let cut = text;
  while (cut.length > 0 && stringWidth(cut) > width - 1) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/** A step of time as the chart's note says it: `1 min`, `5 min`, `1 h`, `1 day`. */
function stepText(ms: number): string {
  const units: [number, string][] = [[86_400_000, ' day'], [3_600_000, ' h'], [60_000, ' min'], [1000, ' s'], [1, ' ms']];
  const [size, unit] = units.find(([u]) => ms % u === 0) ?? [1, ' ms'];
  const n = ms / size;
  return `${n}${unit}${unit === ' day' && n !== 1 ? 's' : ''}`;
}

/**
 * The values of a series fitted to `columns`: each spread across as many columns as fall to it when
 * they are few; when they are more, each column the highest of the values that fall in it. A missing
 * value (NaN) stays missing; a column of missing values only is missing.
 */
function fitSeries(values: readonly number[], columns: number): { points: number[]; perColumn: number } {
  if (values.length <= columns) return { points: Array.from({ length: columns }, (_, c) => values[Math.floor((c * values.length) / columns)] as number), perColumn: 1 };
  const points = Array.from({ length: columns }, (_, c) => {
    const present = values.slice(Math.floor((c * values.length) / columns), Math.floor(((c + 1) * values.length) / columns)).filter((v) => !Number.isNaN(v));
    return present.length > 0 ? Math.max(...present) : NaN;
  });
  return { points, perColumn: Math.ceil(values.length / columns) };
}

/**
 * asciichart's plot of points where NaN is a gap: asciichart draws a line through every point, so the
 * points are drawn with each gap filled, and then every column that touches a gap is cleared, but for
 * the end of the line at a gap's edge. Colour is added last, to what is drawn.
 */
function plotWithGaps(points: readonly number[], axis: Axis, labelWidth: number, color: string | undefined): string {
  const filled = points.map((v, i) => (Number.isNaN(v) ? (points.slice(0, i).findLast((p) => !Number.isNaN(p)) ?? points.find((p) => !Number.isNaN(p)) ?? axis.low) : v));
  const offset = 3;
  const lines = asciichart
    .plot(filled, { min: axis.low, max: axis.high, height: axis.rows, offset, format: (y: number) => axis.label(y).padStart(labelWidth) })
    .split('\n')
    // Characters by code point, as asciichart drew them (its box-drawing characters are one each).
    // eslint-disable-next-line @typescript-eslint/no-misused-spread
    .map((line) => [...line]);
  // Where asciichart puts a value: its row, as it reckons it; its columns start after the label, a space and the axis.
  const ratio = axis.rows / (axis.high - axis.low);
  const bottom = Math.round(axis.low * ratio);
  const rowOf = (v: number) => lines.length - 1 - (Math.round(v * ratio) - bottom);
  const start = labelWidth + 2;
  const put = (row: number, column: number, symbol: string) => {
    const line = lines[row];
    if (line) line[column] = symbol;
  };
  if (Number.isNaN(points[0])) {
    const row = rowOf(filled[0] as number);
    put(row, start - 1, Math.round((filled[0] as number) * ratio) === 0 ? '┼' : '┤');
  }
  for (let x = 0; x < points.length - 1; x++) {
    const [a, b] = [points[x] as number, points[x + 1] as number];
    if (!Number.isNaN(a) && !Number.isNaN(b)) continue;
    for (const line of lines) line[start + x] = ' ';
    if (!Number.isNaN(a)) put(rowOf(a), start + x, '╴');
    if (!Number.isNaN(b)) put(rowOf(b), start + x, '╶');
  }
  return lines
    .map((line) => {
      const text = line.join('').trimEnd();
      return color ? `${text.slice(0, start)}${text.slice(start).replace(/[^ ]+/g, (drawn) => `${color}${drawn}\u001b[0m`)}` : text;
    })
    .join('\n');
}

function lineCharts(rows: readonly Row[], time: TableField, numeric: readonly TableField[], width: number, paint: Paint, color: boolean): string {
  const series = [...rows].sort((a, b) => Date.parse(a[time.name] as string) - Date.parse(b[time.name] as string));
  // With a known step, a bucket with no row is a gap in the line, never a value drawn across it.
  const instants = series.map((r) => Date.parse(r[time.name] as string));
  const step = bucketStep(instants);
  const first = timeText(series[0]?.[time.name] as string, step);
  const last = timeText(series[series.length - 1]?.[time.name] as string, step);
  const slots = step === undefined ? series.map((_, i) => i) : Array.from({ length: Math.round(((instants.at(-1) as number) - (instants[0] as number)) / step) + 1 }, () => -1);
  if (step !== undefined) instants.forEach((t, i) => (slots[Math.round((t - (instants[0] as number)) / step)] = i));
  const blocks: string[] = [];
  let grouped = 0;
  let gaps = false;
  for (const [n, field] of numeric.entries()) {
    // A NULL is no value, drawn as a gap; the heading's figures are of the values there are.
    const values = slots.map((i) => (typeof series[i]?.[field.name] === 'number' ? (series[i]?.[field.name] as number) : NaN));
    const present = values.filter((v) => !Number.isNaN(v));
    gaps ||= present.length < values.length;
    const low = present.length > 0 ? Math.min(...present) : 0;
    const high = present.length > 0 ? Math.max(...present) : 0;
    const axis = axisOf(low, high, field.type === 'integer' || present.every(Number.isInteger));
    // At least as wide as asciichart's offset, which it assumes its labels fill.
    const labelWidth = Math.max(3, stringWidth(axis.label(axis.low)), stringWidth(axis.label(axis.high)));
    // asciichart writes a label, a space, the axis, then one column for each point after the first.
    const columns = width - labelWidth - 2;
    const { points, perColumn } = fitSeries(present.length === 0 ? values.map(() => 0) : values, columns);
    grouped = Math.max(grouped, perColumn);
    const lastValue = series[series.length - 1]?.[field.name];
    const figures = [['min', present.length ? numberText(low) : '-'], ['max', present.length ? numberText(high) : '-'], ['last', typeof lastValue === 'number' ? numberText(lastValue) : '-']];
    const figuresWidth = figures.reduce((sum, [name, value]) => sum + 2 + stringWidth(`${name} ${value}`), 0);
    const heading = `${paint.bold(fit(visible(field.name), Math.max(8, width - figuresWidth)))}${figures.map(([name, value]) => `  ${paint.dim(name)} ${value}`).join('')}`;
    const plot = plotWithGaps(points, axis, labelWidth, color ? SERIES_COLORS[n % SERIES_COLORS.length] : undefined);
    const axisStart = labelWidth + 1;
    const plotWidth = Math.max(points.length - 1, 1);
    const gap = plotWidth - stringWidth(first) - stringWidth(last);
    const axisLine = gap >= 2 ? `${' '.repeat(axisStart)}${first}${' '.repeat(gap)}${last}` : `${' '.repeat(axisStart)}${first} …\n${' '.repeat(axisStart)}… ${last}`;
    blocks.push(`${heading}\n${plot}\n${paint.dim(axisLine)}`);
  }
  const each = step === undefined ? '' : `, ${stepText(step)} each`;
  const missing = slots.filter((i) => i < 0).length;
  const notes = [
    `${rows.length} rows by ${time.name}${each}`,
    missing > 0 ? `${missing} of ${slots.length} buckets have no row: gaps` : gaps ? 'an empty value is a gap' : undefined,
    grouped > 1 ? `each column is the highest of up to ${grouped} buckets` : undefined,
  ].filter((note) => note !== undefined);
  return `${blocks.join('\n\n')}\n\n${paint.dim(notes.join('; '))}\n`;
}

function barCharts(rows: readonly Row[], label: TableField, numeric: readonly TableField[], width: number, paint: Paint): string {
  const labels = rows.map((r) => (r[label.name] === null || r[label.name] === undefined ? '' : visible(String(r[label.name]))));
  const labelWidth = Math.min(Math.max(...labels.map((l) => stringWidth(l))), Math.floor(width * MAX_LABEL_SHARE));
  const blocks = numeric.map((field) => {
    const values = rows.map((r) => (typeof r[field.name] === 'number' ? (r[field.name] as number) : 0));
    const valueTexts = rows.map((r) => (typeof r[field.name] === 'number' ? numberText(r[field.name] as number) : '-'));
    const valueWidth = Math.max(...valueTexts.map((t) => stringWidth(t)));
    const barWidth = Math.max(1, width - labelWidth - valueWidth - 3);
    const high = Math.max(...values, 0);
    const lines = values.map((v, i) => {
      const eighths = high > 0 && v > 0 ? Math.round((v / high) * barWidth * 8) : 0;
      const bar = '█'.repeat(Math.floor(eighths / 8)) + (EIGHTHS[eighths % 8] ?? '');
      const name = fit(labels[i] ?? '', labelWidth);
      return `${name}${' '.repeat(labelWidth - stringWidth(name))} ${paint.cyan(bar)} ${valueTexts[i] ?? ''}`;
    });
    return `${paint.bold(fit(visible(field.name), width))}\n${lines.join('\n')}`;
  });
  return `${blocks.join('\n\n')}\n\n${paint.dim(`${rows.length} rows by ${label.name}`)}\n`;
}
