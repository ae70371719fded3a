import { Chalk } from 'chalk';
import Table from 'cli-table3';
import stringWidth from 'string-width';
import { jsonText } from '../json.js';
import type { Row } from '../queries/types.js';
import { columnTexts, middleOf, type Shown } from './cells.js';
import { visible, type RenderOptions, type TableField } from './types.js';

/**
 * The narrowest a shortened text column gets before the table gives way to records: this, and half of
 * its middle value's width, so what stays of a message or a JSON object still says something.
 */
const MIN_TEXT_WIDTH = 12;
/** The narrowest a header is cut to, across lines, to keep a table a table. */
const MIN_HEADER_WIDTH = 4;
/** The narrowest the value column of records gets, however narrow the terminal. */
const MIN_VALUE_WIDTH = 20;

const isNumber = (f: TableField) => f.type === 'integer' || f.type === 'number';
/** Columns never shortened: the caller's keys, numbers, and the instants a row is about. */
const isWhole = (f: TableField) => f.key === true || isNumber(f) || f.type === 'timestamp' || f.type === 'date';

/**
 * The texts of rows' cells, row by row. Rounded, the columns of fractions (execution times: a minimum, an
 * average, a maximum) share one precision, so that a row's figures keep their order.
 */
function cellTexts(rows: readonly Row[], fields: readonly TableField[], shown: Shown): string[][] {
  const fraction = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && !Number.isInteger(value);
  const fractional = new Set(fields.filter((f) => isNumber(f) && rows.some((r) => fraction(r[f.name]))));
  const numbers = [...fractional].flatMap((f) => rows.map((r) => r[f.name]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v)));
  const middle = shown === 'rounded' && fractional.size > 1 ? middleOf(numbers) : undefined;
  const columns = fields.map((f) => columnTexts(rows.map((r) => r[f.name]), f.type, shown, fractional.has(f) ? middle : undefined, jsonText).map(visible));
  return rows.map((_, i) => columns.map((c) => c[i] ?? ''));
}

/**
 * A header's pieces, each ending where a line may break: after `_`, `-`, `.` or a space. A line that
 * ends at a `_` or a space does not show it (`min_execution_time` wraps as min / execution / time).
 */
function headerPieces(name: string): string[] {
  return name.split(/(?<=[_\-. ])/);
}

const lineEnd = (text: string) => text.replace(/[_ ]$/, '');

/** How narrow a header can wrap: its widest piece. */
function headerMinWidth(name: string): number {
  return Math.max(...headerPieces(name).map((p) => stringWidth(lineEnd(p))));
}

/** A header as lines of at most `width` (a piece longer than that is cut across lines). */
function wrapHeader(name: string, width: number): string {
  if (stringWidth(name) <= width) return name;
  const lines: string[] = [];
  let line = '';
  for (let piece of headerPieces(name)) {
    if (line !== '' && stringWidth(lineEnd(line + piece)) > width) {
      lines.push(lineEnd(line));
      line = '';
    }
    while (stringWidth(lineEnd(piece)) > width) {
      lines.push(piece.slice(0, width));
      piece = piece.slice(width);
    }
    line += piece;
  }
  if (line !== '') lines.push(lineEnd(line));
  return lines.join('\n');
}

/**
 * The width of each column (without padding) so the table fits `total` columns of terminal, or
 * undefined when it cannot: headers wider than their values wrap at word breaks (or, `cutHeaders`,
 * anywhere), then the widest text columns are shortened, down to MIN_TEXT_WIDTH or half their middle
 * value; keys, numbers and timestamps stay whole.
 */
export function fitColumns(fields: readonly TableField[], texts: readonly string[][], total: number, cutHeaders = false): number[] | undefined {
  const budget = total - (3 * fields.length + 1);
  const cells = fields.map((_, i) => Math.max(0, ...texts.map((t) => stringWidth(t[i] ?? ''))));
  const widths = fields.map((f, i) => Math.max(stringWidth(f.name), cells[i] ?? 0));
  const sum = () => widths.reduce((a, b) => a + b, 0);
  if (sum() <= budget) return widths;
  const headerMin = fields.map((f) => headerMinWidth(f.name));
  for (const [i] of fields.entries()) widths[i] = Math.max(headerMin[i] ?? 0, cells[i] ?? 0);
  // Cut, a header goes down to a few columns (or its values' width), the widest first.
  const headerFloor = fields.map((_, i) => (cutHeaders ? Math.min(headerMin[i] ?? 0, MIN_HEADER_WIDTH) : (headerMin[i] ?? 0)));
  const halfMedian = fields.map((_, i) => {
    const sorted = texts.map((t) => stringWidth(t[i] ?? '')).sort((a, b) => a - b);
    return Math.ceil((sorted[Math.floor(sorted.length / 2)] ?? 0) / 2);
  });
  const floors = fields.map((f, i) =>
    isWhole(f) ? Math.max(headerFloor[i] ?? 0, cells[i] ?? 0) : Math.max(headerFloor[i] ?? 0, Math.min(Math.max(MIN_TEXT_WIDTH, halfMedian[i] ?? 0), widths[i] ?? 0)),
  );
  while (sum() > budget) {
    let widest = -1;
    for (const [i, w] of widths.entries()) if (w > (floors[i] ?? 0) && (widest < 0 || w > (widths[widest] ?? 0))) widest = i;
    if (widest < 0) return undefined;
    widths[widest] = (widths[widest] ?? 0) - 1;
  }
  return widths;
}

/**
 * Rows for people: an aligned table (numbers right-aligned, a rule under the header, a row count after
 * it) that fits the terminal's width, or, when its columns cannot fit even shortened, one block of
 * `field  value` lines a record (as psql's `\x auto` and clickhouse-client's Vertical format do).
 * What is shortened first is what loses least: headers wrapped at word breaks, then numbers rounded
 * (said under the table), then headers wrapped anywhere. `expanded` forces either.
 */
export function renderTable(rows: readonly Row[], options: RenderOptions): string {
  const chalk = new Chalk({ level: options.color ? 1 : 0 });
  // Shown as every value is: a field's name comes from a query's SQL, which may be anyone's.
  const fields = options.fields.map((f) => ({ ...f, name: visible(f.name) }));
  const count = `${rows.length} ${rows.length === 1 ? 'row' : 'rows'}`;
  const width = options.width ?? 80;
  const whole = cellTexts(rows, options.fields, 'whole');
  if (options.expanded === true) return rows.length === 0 ? `${chalk.dim(count)}\n` : `${records(whole, fields, width, chalk)}\n${chalk.dim(count)}\n`;
  const rounded = () => cellTexts(rows, options.fields, 'rounded');
  const tries: [() => string[][], boolean, string][] = [
    [() => whole, false, ''],
    [rounded, false, 'numbers rounded to fit'],
    [rounded, true, 'numbers rounded to fit'],
  ];
  for (const [texts, cutHeaders, note] of tries) {
    const shown = texts();
    const widths = fitColumns(fields, shown, width, cutHeaders);
    if (widths) return `${drawTable(fields, shown, widths, options.color, chalk)}\n${chalk.dim(note === '' ? count : `${count}; ${note} (--expanded shows every digit)`)}\n`;
  }
  // Records of no rows are none: the count alone, as psql's expanded display says `(0 rows)`.
  if (options.expanded !== false) return rows.length === 0 ? `${chalk.dim(count)}\n` : `${records(whole, fields, width, chalk)}\n${chalk.dim(count)}\n`;
  return `${drawTable(fields, whole, undefined, options.color, chalk)}\n${chalk.dim(count)}\n`;
}

/** A table of cells, its columns `widths` wide (cli-table3 shortens what is longer with '…'), with a rule under the header. */
function drawTable(fields: readonly TableField[], texts: readonly string[][], widths: readonly number[] | undefined, color: boolean, chalk: InstanceType<typeof Chalk>): string {
  const heads = fields.map((f, i) => (widths ? wrapHeader(f.name, widths[i] ?? f.name.length) : f.name));
  const table = new Table({
    head: heads.map((h) => chalk.bold(h)),
    style: { head: [], border: color ? ['grey'] : [] },
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
    colAligns: fields.map((f) => (isNumber(f) ? 'right' : 'left')),
    ...(widths ? { colWidths: widths.map((w) => w + 2) } : {}),
  });
  for (const t of texts) table.push(t);
  const lines = table.toString().split('\n');
  // The rule under the header, made of the top border's own characters (and colour).
  const headLines = Math.max(...heads.map((h) => h.split('\n').length));
  const rule = (lines[0] ?? '').replace('┌', '├').replaceAll('┬', '┼').replace('┐', '┤');
  lines.splice(1 + headLines, 0, rule);
  return lines.join('\n');
}

/**
 * One block a record, as psql's expanded display: a title line, then each field's name and its value,
 * a long value wrapped onto the lines below.
 */
function records(texts: readonly string[][], fields: readonly TableField[], width: number, chalk: InstanceType<typeof Chalk>): string {
  const nameWidth = Math.max(...fields.map((f) => stringWidth(f.name)));
  const valueWidth = Math.max(MIN_VALUE_WIDTH, width - nameWidth - 3);
  const blank = Object.fromEntries(['top', 'top-mid', 'top-left', 'top-right', 'bottom', 'bottom-mid', 'bottom-left', 'bottom-right', 'left', 'left-mid', 'mid', 'mid-mid', 'right', 'right-mid'].map((c) => [c, '']));
  return texts
    .map((t, i) => {
      const title = `─[ record ${i + 1} ]`;
      const table = new Table({
        chars: { ...blank, middle: chalk.grey(' │ ') },
        style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
        colWidths: [nameWidth, valueWidth],
        wordWrap: true,
      });
      for (const [j, f] of fields.entries()) {
        const value = t[j] ?? '';
        // Text wraps at spaces; a word too long for a line (JSON, a URL) is cut across lines.
        const longWord = value.split(/\s+/).some((word) => stringWidth(word) > valueWidth);
        table.push([chalk.bold(f.name), { content: value, wrapOnWordBoundary: !longWord }]);
      }
      const rule = chalk.dim(`${title}${'─'.repeat(Math.max(0, Math.min(width, nameWidth + 3 + valueWidth) - stringWidth(title)))}`);
      // The last column is padded to its width: lines end where their text does (colour codes kept).
      // eslint-disable-next-line no-control-regex
      return `${rule}\n${table.toString().replace(/ +((?:\u001b\[[\d;]*m)*)$/gm, '$1')}`;
    })
    .join('\n');
}
