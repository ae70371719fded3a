import asciichart from 'asciichart';
import { Chalk } from 'chalk';
import stringWidth from 'string-width';
import { InputError } from '../errors.js';
import type { Row } from '../queries/types.js';
import { chartShape } from './shape.js';
import { visible, type RenderOptions, type TableField } from './types.js';

/** Lines of each line chart's plot. */
const PLOT_HEIGHT = 8;
/** The most columns one bucket is drawn across, when a few buckets would leave the plot narrow. */
const MAX_STRETCH = 8;
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
 * needs. Lines are drawn by asciichart; savedq only fits the series to the width (a bucket a column,
 * stretched when few, the highest of several buckets a column when many) and labels it.
 */
export function renderChart(rows: readonly Row[], options: RenderOptions): string {
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

/** The axis labels of a plot from `low` to `high`: as many decimals as its steps need, all the same. */
function axisLabel(low: number, high: number): (value: number) => string {
  if (Math.max(Math.abs(low), Math.abs(high)) >= 1e6) return numberText;
  const step = (high - low) / PLOT_HEIGHT;
  const decimals = step >= 1 || step === 0 ? 0 : Math.min(4, Math.ceil(-Math.log10(step)));
  return (value) => value.toFixed(decimals);
}

const timeText = (value: string) => visible(value.replace('T', ' ').replace(/(\.0+)?Z$/, ''));

/** A text cut to `width` columns with '…' when longer. */
function fit(text: string, width: number): string {
  if (stringWidth(text) <= width) return text;
  let cut = text;
  while (cut.length > 0 && stringWidth(cut) > width - 1) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/**
 * The values of a series fitted to `columns`: each stretched across a few columns when they are few;
 * when they are more, each column the highest of the values that fall in it (one or `perColumn`).
 */
function fitSeries(values: readonly number[], columns: number): { points: number[]; perColumn: number } {
  if (values.length <= columns) {
    const stretch = Math.max(1, Math.min(MAX_STRETCH, Math.floor(columns / values.length)));
    return { points: values.flatMap((v) => Array<number>(stretch).fill(v)), perColumn: 1 };
  }
  const points = Array.from({ length: columns }, (_, c) => Math.max(...values.slice(Math.floor((c * values.length) / columns), Math.floor(((c + 1) * values.length) / columns))));
  return { points, perColumn: Math.ceil(values.length / columns) };
}

function lineCharts(rows: readonly Row[], time: TableField, numeric: readonly TableField[], width: number, paint: Paint, color: boolean): string {
  const series = [...rows].sort((a, b) => Date.parse(a[time.name] as string) - Date.parse(b[time.name] as string));
  const first = timeText(series[0]?.[time.name] as string);
  const last = timeText(series[series.length - 1]?.[time.name] as string);
  const blocks: string[] = [];
  let grouped = 0;
  for (const [n, field] of numeric.entries()) {
    // An empty value (NULL) draws as the series' lowest, so the line stays whole; the heading's figures are of the values there are.
    const present = series.map((r) => r[field.name]).filter((v): v is number => typeof v === 'number');
    const low = Math.min(...present);
    const high = Math.max(...present);
    const values = series.map((r) => (typeof r[field.name] === 'number' ? (r[field.name] as number) : low));
    const label = axisLabel(low, high);
    // At least as wide as asciichart's offset, which it assumes its labels fill.
    const labelWidth = Math.max(3, stringWidth(label(low)), stringWidth(label(high)));
    // asciichart writes a label, a space, the axis, then one column for each point after the first.
    const columns = width - labelWidth - 2;
    const { points, perColumn } = fitSeries(present.length === 0 ? values.map(() => 0) : values, columns);
    grouped = Math.max(grouped, perColumn);
    const lastValue = series[series.length - 1]?.[field.name];
    const figures = [['min', present.length ? numberText(low) : '-'], ['max', present.length ? numberText(high) : '-'], ['last', typeof lastValue === 'number' ? numberText(lastValue) : '-']];
    const figuresWidth = figures.reduce((sum, [name, value]) => sum + 2 + stringWidth(`${name} ${value}`), 0);
    const heading = `${paint.bold(fit(visible(field.name), Math.max(8, width - figuresWidth)))}${figures.map(([name, value]) => `  ${paint.dim(name)} ${value}`).join('')}`;
    const plot = asciichart.plot(points, {
      height: PLOT_HEIGHT,
      offset: 3,
      format: (y: number) => label(y).padStart(labelWidth),
      ...(color ? { colors: [SERIES_COLORS[n % SERIES_COLORS.length]] } : {}),
    });
    const axisStart = labelWidth + 1;
    const plotWidth = Math.max(points.length - 1, 1);
    const gap = plotWidth - stringWidth(first) - stringWidth(last);
    const axis = gap >= 2 ? `${' '.repeat(axisStart)}${first}${' '.repeat(gap)}${last}` : `${' '.repeat(axisStart)}${first} …\n${' '.repeat(axisStart)}… ${last}`;
    blocks.push(`${heading}\n${plot.replace(/ +$/gm, '')}\n${paint.dim(axis)}`);
  }
  const note = grouped > 1 ? `\n${paint.dim(`${rows.length} rows by ${time.name}; each column is the highest of up to ${grouped} of them`)}` : `\n${paint.dim(`${rows.length} rows by ${time.name}`)}`;
  return `${blocks.join('\n\n')}\n${note}\n`;
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
