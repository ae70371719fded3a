import { InputError } from '../errors.js';
import { jsonText } from '../json.js';
import type { Row } from '../queries/types.js';
import { FORMATS, inBatches, terminalJson, type Format, type RenderOptions, type Renderer } from './types.js';

export { fieldsOfRows } from './shape.js';
export { FORMATS, RUN_FORMATS, type Format, type RenderOptions, type TableField } from './types.js';

/** A row's JSON text (an integer past 2^53 with every digit): on a terminal with DEL and C1 escaped too (JSON.stringify escapes C0). */
const rowJson = (options: RenderOptions) => (options.terminal === true ? (r: Row) => terminalJson(jsonText(r)) : (r: Row) => jsonText(r));

function* json(rows: readonly Row[], options: RenderOptions): Generator<string> {
  if (rows.length === 0) {
    yield '[]\n';
    return;
  }
  const text = rowJson(options);
  let first = true;
  for (const batch of inBatches(rows)) {
    yield `${first ? '[\n' : ',\n'}${batch.map(text).join(',\n')}`;
    first = false;
  }
  yield '\n]\n';
}

function* ndjson(rows: readonly Row[], options: RenderOptions): Generator<string> {
  const text = rowJson(options);
  for (const batch of inBatches(rows)) yield batch.map((r) => `${text(r)}\n`).join('');
}

/**
 * One renderer per format. JSON ones are inline; table and CSV load their libraries only when used, so
 * a pipeline reading JSON (the cache-hit path of cron jobs and scripts) does not pay for them.
 */
const renderers: Record<Format, () => Promise<Renderer>> = {
  table: async () => {
    const { renderTable } = await import('./table.js');
    return (rows, options) => [renderTable(rows, options)];
  },
  json: async () => json,
  ndjson: async () => ndjson,
  csv: async () => (await import('./csv.js')).renderCsv,
  chart: async () => {
    const { renderChart } = await import('./chart.js');
    return (rows, options) => [renderChart(rows, options)];
  },
};

/** The renderer of a text format, for rows that come in parts (an export): each part rendered as it comes. */
export async function textRenderer(format: 'ndjson' | 'csv'): Promise<Renderer> {
  return renderers[format]();
}

/** Renders rows in a format, in pieces. */
export async function render(format: Format, rows: readonly Row[], options: RenderOptions): Promise<Iterable<string>> {
  return (await renderers[format]())(rows, options);
}

/** Parses a --format value among `allowed`; the default is a table on a terminal and JSON otherwise. */
export function chooseFormat(requested: string | undefined, isTerminal: boolean, allowed: readonly Format[] = FORMATS): Format {
  if (requested === undefined) return isTerminal ? 'table' : 'json';
  if (!(allowed as readonly string[]).includes(requested)) {
    throw new InputError(`invalid format ${JSON.stringify(requested)}: one of ${allowed.join(', ')}.`);
  }
  return requested as Format;
}
