import { Chalk } from 'chalk';
import Table from 'cli-table3';
import type { Row } from '../queries/types.js';
import type { RenderOptions } from './index.js';

function cellText(value: unknown, type: string): string {
  if (value === null || value === undefined) return '';
  if (type === 'timestamp' && typeof value === 'string') return value.replace('T', ' ').replace(/Z$/, '');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, Math.max(1, max - 1))}…` : text;
}

/** An aligned table for people: numbers right-aligned, long cells shortened to fit, a row count. */
export function renderTable(rows: readonly Row[], options: RenderOptions): string {
  const chalk = new Chalk({ level: options.color ? 1 : 0 });
  const { fields } = options;
  const texts = rows.map((row) => fields.map((f) => cellText(row[f.name], f.type)));
  // Give every column its natural width, then shrink the widest until the table fits the terminal.
  const widths = fields.map((f, i) => Math.max(f.name.length, ...texts.map((t) => (t[i] ?? '').length)));
  const budget = (options.width ?? Infinity) - (3 * fields.length + 1);
  while (widths.reduce((a, b) => a + b, 0) > budget) {
    const widest = widths.indexOf(Math.max(...widths));
    if ((widths[widest] ?? 0) <= 12) break;
    widths[widest] = (widths[widest] ?? 0) - 1;
  }
  const table = new Table({
    head: fields.map((f) => chalk.bold(f.name)),
    style: { head: [], border: options.color ? ['grey'] : [] },
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
    colAligns: fields.map((f) => (f.type === 'integer' || f.type === 'number' ? 'right' : 'left')),
  });
  for (const t of texts) table.push(t.map((text, i) => shorten(text, widths[i] ?? text.length)));
  const count = `${rows.length} ${rows.length === 1 ? 'row' : 'rows'}`;
  return `${table.toString()}\n${chalk.dim(count)}\n`;
}
