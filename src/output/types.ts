import type { FieldDefinition, Row } from '../queries/types.js';

/** The output formats of rows, one renderer each, shared by every command that lists and by HTTP. */
export const FORMATS = ['table', 'json', 'ndjson', 'csv'] as const;
/** `run`'s formats: the others, and a chart of its result (list and cache list are not results to draw). */
export const RUN_FORMATS = [...FORMATS, 'chart'] as const;
export type Format = (typeof RUN_FORMATS)[number];

/** A column: a field, and whether it is a key a table never shortens (a name, an id). */
export interface TableField extends Pick<FieldDefinition, 'name' | 'type'> {
  readonly key?: boolean;
}

/** What a renderer needs besides the rows. */
export interface RenderOptions {
  /** Declared fields, in order; rows are rendered in this column order. */
  readonly fields: readonly TableField[];
  /** Colour for the table format. */
  readonly color: boolean;
  /** Terminal width the table format fits (default 80). */
  readonly width: number | undefined;
  /** Table format: records instead of a table (true), never (false), or when the table cannot fit. */
  readonly expanded?: boolean | undefined;
  /** CSV: text as it is, formulas included (default: a cell that a spreadsheet would run starts with '). */
  readonly csvRaw?: boolean | undefined;
  /**
   * The text goes to a terminal: CSV, JSON and NDJSON show a control character of a value as a visible
   * escape, as tables do (a pipe or a file gets the values' own characters).
   */
  readonly terminal?: boolean | undefined;
  /** CSV: begin with the header row (default); an export's later parts do not. */
  readonly header?: boolean | undefined;
}

/** A renderer gives its text in pieces, so a large output is written as it is made, not held whole. */
export type Renderer = (rows: readonly Row[], options: RenderOptions) => Iterable<string>;

/** Rows a piece of output holds at most. */
const BATCH_ROWS = 500;

/** Rows in batches of BATCH_ROWS. */
export function* inBatches(rows: readonly Row[]): Generator<readonly Row[]> {
  for (let i = 0; i < rows.length; i += BATCH_ROWS) yield rows.slice(i, i + BATCH_ROWS);
}

/** Control characters: C0, DEL and C1 (ESC, CR, BEL, CSI … among them). */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Text with every control character shown as a visible escape (`\n`, `\t`, `\x1b`), for a terminal:
 * a value (a log line, written by whoever sent the logged request) cannot move the cursor, retitle the
 * terminal or hide rows.
 */
export function visible(text: string): string {
  return text.replace(CONTROL, (c) => NAMED[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** DEL and C1, which JSON.stringify leaves as they are (it escapes C0 itself). */
const RAW_IN_JSON = /[\u007f-\u009f]/g;

/** JSON text for a terminal: DEL and the C1 controls (CSI among them) escaped as `\u009b`, still the same JSON value. */
export function terminalJson(json: string): string {
  return json.replace(RAW_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
