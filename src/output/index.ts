import { InputError } from '../errors.js';
import type { FieldDefinition, Row } from '../endpoints/types.js';
import { renderCsv } from './csv.js';
import { renderTable } from './table.js';

/** The output formats, one renderer each, shared by every command. */
export const FORMATS = ['table', 'json', 'ndjson', 'csv'] as const;
export type Format = (typeof FORMATS)[number];

/** What a renderer needs besides the rows. */
export interface RenderOptions {
  /** Declared fields, in order; rows are rendered in this column order. */
  readonly fields: readonly Pick<FieldDefinition, 'name' | 'type'>[];
  /** Colour for the table format. */
  readonly color: boolean;
  /** Terminal width, for shortening long cells in the table format. */
  readonly width: number | undefined;
}

type Renderer = (rows: readonly Row[], options: RenderOptions) => string;

const renderers: Record<Format, Renderer> = {
  table: renderTable,
  json: (rows) => (rows.length === 0 ? '[]\n' : `[\n${rows.map((r) => JSON.stringify(r)).join(',\n')}\n]\n`),
  ndjson: (rows) => rows.map((r) => `${JSON.stringify(r)}\n`).join(''),
  csv: renderCsv,
};

/** Renders rows in a format. */
export function render(format: Format, rows: readonly Row[], options: RenderOptions): string {
  return renderers[format](rows, options);
}

/** Parses a --format value; the default is a table on a terminal and JSON otherwise. */
export function chooseFormat(requested: string | undefined, isTerminal: boolean): Format {
  if (requested === undefined) return isTerminal ? 'table' : 'json';
  if (!(FORMATS as readonly string[]).includes(requested)) {
    throw new InputError(`invalid format ${JSON.stringify(requested)}: one of ${FORMATS.join(', ')}.`);
  }
  return requested as Format;
}

/** Colour rules: --no-color and NO_COLOR turn it off, FORCE_COLOR turns it on, else only on a terminal. */
export function useColor(flag: boolean | undefined, isTerminal: boolean, env = process.env): boolean {
  if (flag === false) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined) return env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false';
  return isTerminal;
}
