import { InputError } from '../errors.js';
import type { FieldDefinition, Row } from '../queries/types.js';

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

/**
 * One renderer per format. JSON ones are inline; table and CSV load their libraries only when used, so
 * a pipeline reading JSON (the cache-hit path of cron jobs and scripts) does not pay for them.
 */
const renderers: Record<Format, () => Promise<Renderer>> = {
  table: async () => (await import('./table.js')).renderTable,
  json: async () => (rows) => (rows.length === 0 ? '[]\n' : `[\n${rows.map((r) => JSON.stringify(r)).join(',\n')}\n]\n`),
  ndjson: async () => (rows) => rows.map((r) => `${JSON.stringify(r)}\n`).join(''),
  csv: async () => (await import('./csv.js')).renderCsv,
};

/** Renders rows in a format. */
export async function render(format: Format, rows: readonly Row[], options: RenderOptions): Promise<string> {
  return (await renderers[format]())(rows, options);
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
