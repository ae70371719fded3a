import { durationText, stateWord, type AlertState, type CheckReport, type Evaluation, type GoneAlert } from '../alerts/index.js';
import { AlertsNotOkError, InputError } from '../errors.js';
import { jsonText } from '../json.js';
import type { Savedq } from '../library.js';
import { alertsOf } from '../admin.js';
import { displayPath, problemText } from '../queries/catalog.js';
import type { Row } from '../queries/types.js';
import type { AsOf } from '../time.js';
import { plural } from '../words.js';
import { wrapped } from '../output/wrap.js';
import { checkInterrupted, commandLog, hintWidth, outputFormat, report, writeOut, writeRows, type CommonOptions, type Io } from './io.js';

/** Options of `savedq alerts check`. */
export interface AlertsCheckOptions extends CommonOptions {
  /** Evaluate as of this instant (and move the alerts' clock there). */
  readonly at?: AsOf;
  /** Only these alerts. */
  readonly names?: readonly string[];
  /** Evaluate even the alerts that are not due. */
  readonly force?: boolean | undefined;
  /** `text` (default: lines on standard error) or `json` (the report on standard output). */
  readonly format?: string | undefined;
}

const LIST_FIELDS = [
  { name: 'alert', type: 'string', key: true },
  { name: 'state', type: 'string' },
  { name: 'since', type: 'timestamp' },
  { name: 'evaluated', type: 'timestamp' },
  { name: 'every', type: 'string' },
  { name: 'query', type: 'string' },
  { name: 'notify', type: 'string' },
] as const;

/** An instant as a table shows it (to the second: the table writes it as it writes every instant), or as tools read it (ISO 8601 to the millisecond, null for none). */
function instant(ms: number | null, format: string): string | null {
  if (ms === null) return null;
  const iso = new Date(ms).toISOString();
  return format === 'table' ? iso.replace(/\.\d{3}Z$/, 'Z') : iso;
}

/** A state as a table shows it (its word), or as tools read it (null before the first evaluation). */
function stateText(state: AlertState | null, format: string): string | null {
  return format === 'table' ? stateWord(state) : state;
}

/** `savedq alerts`: each alert, its state and since when, its last evaluation, and what it still owes. */
export async function alertsListCommand(lib: Savedq, options: CommonOptions & { format?: string | undefined }, io: Io): Promise<Row[]> {
  const format = outputFormat(io, options.format, ['table', 'json', 'ndjson', 'csv']);
  const { alerts, broken, gone, folders } = await (await alertsOf(lib)).list();
  const rows: Row[] = alerts.map((a) => ({
    alert: a.name,
    state: stateText(a.state, format),
    since: instant(a.since, format),
    evaluated: instant(a.evaluatedAt, format),
    every: durationText(a.every),
    query: a.query,
    notify: format === 'table' || format === 'csv' ? a.targets.join(', ') : a.targets,
    ...(format === 'table' ? {} : { detail: a.detail, waiting: a.waiting, last_error: a.lastError }),
  }));
  await writeRows(io, options, format, rows, LIST_FIELDS);
  for (const b of broken) for (const p of b.problems) io.stderr.write(`warning: skipped ${problemText(p)}\n`);
  const owing = alerts.filter((a) => a.waiting > 0);
  for (const a of owing) report(io, options, `${a.name}: ${plural(a.waiting, 'notification')} waiting to be delivered${a.lastError ? ` (last attempt: ${a.lastError})` : ''}`);
  for (const g of gone) io.stderr.write(`${wrapped(goneLine(g, folders, lib), 0, 2, hintWidth(io))}\n`);
  if (alerts.length === 0 && broken.length === 0) report(io, options, wrapped(`no alerts: no <name>.alert.yaml file in ${whereLooked(folders, lib)} (see savedq alerts --help).`, 0, 2, hintWidth(io)));
  return rows;
}

/** A change of state as one line: `firing  fn-errors  (was ok): 3 rows matched`. */
function changeLine(e: Evaluation): string {
  return `${e.newState.padEnd(7)} ${e.alert} (was ${stateWord(e.oldState)}): ${e.detail}`;
}

/**
 * `savedq alerts check`: evaluates every alert that is due, prints a line for each change of state,
 * delivers what is owed, and exits 1 when any alert is firing or in error (or a file is broken), else
 * 0; meant for `* * * * * savedq alerts check --quiet`.
 */
export async function alertsCheckCommand(lib: Savedq, options: AlertsCheckOptions, io: Io): Promise<CheckReport> {
  const json = options.format === 'json';
  const alerts = await alertsOf(lib);
  const result = await alerts.check({ at: options.at, names: options.names, force: options.force === true, signal: options.signal });
  await lib.announce('alerts check');
  checkInterrupted(options.signal);
  const log = commandLog(io, options);
  for (const b of result.broken) for (const p of b.problems) log.warn(`warning: skipped ${problemText(p)}`);
  for (const e of result.evaluations) if (e.newState !== e.oldState) log.info(changeLine(e));
  for (const d of result.deliveries) {
    if (d.delivered) log.info(`notified ${d.alert} ${d.newState} to ${d.target}`);
    else if (d.gaveUp) log.warn(`warning: gave up notifying ${d.alert} ${d.newState} to ${d.target} after 24 h: ${d.error ?? ''}`);
    else log.info(`could not notify ${d.alert} ${d.newState} to ${d.target} (${d.error ?? ''}); tried again later`);
  }
  for (const name of result.busy) log.info(`${name}: being evaluated by another savedq process; left to it`);
  // An alert savedq keeps but cannot find is never taken for quiet: the wrong folders (cron's), or a file removed.
  // Wrapped to a terminal's width, under their first word, as every hint is.
  const hint = (text: string) => wrapped(text, 0, 2, hintWidth(io));
  for (const g of result.gone) log.warn(hint(goneLine(g, result.folders, lib)));
  if (result.states.size === 0 && result.broken.length === 0 && result.gone.length === 0) log.info(hint(`no alerts: no <name>.alert.yaml file in ${whereLooked(result.folders, lib)}.`));
  const bad = [...result.states].filter(([, s]) => s === 'firing' || s === 'error');
  if (json) {
    await writeOut(
      io.stdout,
      `${JSON.stringify(
        {
          evaluated: result.evaluations.map((e) => ({ alert: e.alert, query: e.query, old_state: e.oldState, new_state: e.newState, matched: e.matched, ...(e.error ? { error: e.error } : {}), notified: e.notification !== undefined })),
          deliveries: result.deliveries,
          busy: result.busy,
          broken: result.broken.flatMap((b) => b.problems.map((p) => ({ file: p.file, line: p.line, message: p.message }))),
          states: Object.fromEntries(result.states),
          gone: result.gone,
        },
        null,
        2,
      )}\n`,
    );
  }
  const counts = (['ok', 'pending', 'firing', 'error'] as const).map((s) => `${[...result.states.values()].filter((v) => v === s).length} ${s}`).join(', ');
  report(io, options, `alerts: ${result.evaluations.length} evaluated; ${counts}${result.gone.length > 0 ? `; ${result.gone.length} gone` : ''}`);
  if (bad.length > 0 || result.broken.length > 0 || result.gone.length > 0) {
    const parts = [
      ...bad.map(([name, s]) => `${name} ${s}`),
      ...(result.broken.length > 0 ? [`${plural(result.broken.length, 'alert file')} broken`] : []),
      ...result.gone.map((g) => `${g.name} gone`),
    ];
    throw new AlertsNotOkError(`alerts not ok: ${parts.join(', ')}.`, { silent: options.quiet === true });
  }
  return result;
}

/** Where alert files were looked for: the folders, or the default folder that does not exist. */
function whereLooked(folders: readonly string[], lib: Savedq): string {
  return folders.length > 0 ? folders.map(displayPath).join(', ') : `a queries folder: none was given (--queries, SAVEDQ_QUERIES) and ${displayPath(lib.config.newQueriesDir)} does not exist`;
}

/** What a check says of an alert it keeps but cannot find. */
function goneLine(g: GoneAlert, folders: readonly string[], lib: Savedq): string {
  return `gone    ${g.name} (was ${stateWord(g.state)}): no ${g.name}.alert.yaml in ${whereLooked(folders, lib)}; if it was removed on purpose, savedq alerts forget ${g.name}`;
}

/** `savedq alerts forget <name>`: drops what is kept of an alert whose file is gone. */
export async function alertsForgetCommand(lib: Savedq, options: CommonOptions & { name: string }, io: Io): Promise<GoneAlert> {
  const forgotten = await (await alertsOf(lib)).forget(options.name);
  report(io, options, `forgot ${forgotten.name} (was ${stateWord(forgotten.state)}): its state, history and undelivered notifications.`);
  return forgotten;
}

/** `savedq alerts test <name>`: evaluates one alert now and prints the JSON it would send, sending nothing and changing nothing. */
export async function alertsTestCommand(lib: Savedq, options: CommonOptions & { name: string; at?: AsOf }, io: Io): Promise<Evaluation> {
  const evaluation = await (await alertsOf(lib)).test(options.name, options.at);
  await writeOut(io.stdout, `${jsonText(evaluation.notification, 2)}\n`);
  const sends = evaluation.wouldSend
    ? `would send this to ${evaluation.targets.join(', ')}`
    : `a change from ${stateWord(evaluation.oldState)} to ${evaluation.newState} sends nothing; above is what a notification would carry`;
  report(io, options, `${evaluation.alert}: ${stateWord(evaluation.oldState)} -> ${evaluation.newState} (${evaluation.detail}); ${sends}. Nothing was sent.`);
  return evaluation;
}

const HISTORY_FIELDS = [
  { name: 'at', type: 'timestamp', key: true },
  { name: 'old_state', type: 'string' },
  { name: 'new_state', type: 'string' },
  { name: 'detail', type: 'string' },
] as const;

/** `savedq alerts history <name>`: an alert's latest changes of state, newest first. */
export async function alertsHistoryCommand(lib: Savedq, options: CommonOptions & { name: string; format?: string | undefined; limit?: string | undefined }, io: Io): Promise<Row[]> {
  const format = outputFormat(io, options.format, ['table', 'json', 'ndjson', 'csv']);
  const limit = options.limit === undefined ? 20 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new InputError(`invalid --limit ${JSON.stringify(options.limit)}: a whole number from 1 to 1000.`);
  const alerts = await alertsOf(lib);
  const { name } = alerts.find(options.name);
  const rows: Row[] = (await alerts.history(name, limit)).map((c) => ({
    at: instant(c.at, format),
    old_state: stateText(c.oldState, format),
    new_state: c.newState,
    detail: c.detail,
  }));
  await writeRows(io, options, format, rows, HISTORY_FIELDS);
  return rows;
}
