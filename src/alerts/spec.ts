import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Node } from 'yaml';
import { errnoText } from '../errno.js';
import { filesIn } from '../fs.js';
import type { DefinitionProblem } from '../queries/definition.js';
import type { RawParams } from '../queries/params.js';
import { NAME_PATTERN } from '../queries/types.js';
import {
  describeNode,
  isNull,
  isSeq,
  keyName,
  mapEntries,
  Problem,
  readKeys,
  scalarValue,
  text_,
  unknownKey,
  valueText,
  yamlKeysOf,
  type LineOf,
} from '../queries/yaml-reading.js';

/** How an alert file is named: `<name>.alert.yaml`, in a queries folder. */
export const ALERT_FILE_SUFFIX = '.alert.yaml';
/** An alert is looked at no more often than this (docs/alerts.md). */
const MIN_EVERY_MS = 60_000;


/** Where a notification goes: a webhook (POST of the JSON) or a command (the JSON on its standard input). */
export type Target = { readonly webhook: string } | { readonly command: readonly string[] };

/** An alert as its file says it. */
export interface AlertSpec {
  /** The file's name without `.alert.yaml`. */
  readonly name: string;
  readonly file: string;
  readonly description: string | undefined;
  /** The saved query's name or id. */
  readonly query: string;
  readonly params: RawParams;
  /** An expression over one row of the answer; the alert fires when a row matches. */
  readonly when?: string | undefined;
  /** A SELECT over `result`; the alert fires when it returns a row. */
  readonly whenSql?: string | undefined;
  readonly everyMs: number;
  /** How long the condition must hold before the alert fires (pending before); 0: at once. */
  readonly forMs: number;
  /** How often to notify again while it stays firing; undefined: never. */
  readonly repeatMs: number | undefined;
  readonly notify: readonly Target[];
  /** Lines of the file, for what `check` says of its parts. */
  readonly lines: { readonly query: number; readonly params: number; readonly condition: number };
}

/** An alert file as read: the alert, or what is wrong with it. */
export type ReadAlertFile =
  | { readonly alert: AlertSpec; readonly problems?: undefined }
  | {
      readonly alert?: undefined;
      readonly problems: readonly DefinitionProblem[];
      /** What read well of a broken file's call (its query, parameters and condition), for check to check too: every problem at once. */
      readonly call?: AlertCall;
    };

/** An alert's call: what check asks the library of it. */
export type AlertCall = Pick<AlertSpec, 'file' | 'query' | 'params' | 'when' | 'whenSql' | 'lines'>;

/** Whether a file name is an alert file's. */
function isAlertFileName(name: string): boolean {
  return name.endsWith(ALERT_FILE_SUFFIX) && name.length > ALERT_FILE_SUFFIX.length;
}

/** Every alert file directly in the folders, by name; a name in two folders is the first folder's (the other is reported). */
export function readAlertFiles(folders: readonly string[]): ReadAlertFile[] {
  const read: ReadAlertFile[] = [];
  const seen = new Map<string, string>();
  for (const { name: fileName, file } of filesIn(folders, isAlertFileName)) {
    const name = fileName.slice(0, -ALERT_FILE_SUFFIX.length);
    const first = seen.get(name);
    if (first !== undefined) {
      read.push({ problems: [{ file, line: 1, message: `another alert is named ${name} (${first}): each alert needs a name of its own.` }] });
      continue;
    }
    seen.set(name, file);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      read.push({ problems: [{ file, line: 0, message: `cannot read the alert file: ${errnoText(err, 'file')}.` }] });
      continue;
    }
    read.push(readAlertFile(file, text));
  }
  return read;
}

/** A duration as people write it: `90s`, `5m`, `4h`, `1d`. */
function durationMs(text: string): number | undefined {
  const m = /^(\d{1,6})\s*(s|m|h|d)$/.exec(text.trim());
  if (!m) return undefined;
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
  return Number(m[1]) * unit;
}

/** A duration the other way round, as short as it goes: 300000 is `5m`. */
export function durationText(ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000]] as const) if (ms % size === 0 && ms >= size) return `${ms / size}${unit}`;
  return `${Math.round(ms / 1000)}s`;
}

function duration(node: Node | null, line: number, what: string, min: number): number {
  const value = scalarValue(node);
  const ms = typeof value === 'string' ? durationMs(value) : undefined;
  if (ms === undefined) throw new Problem(line, `${what} must be a duration such as 30s, 5m, 4h or 1d, not ${typeof value === 'string' ? `'${value}'` : describeNode(node)}.`);
  if (ms < min) throw new Problem(line, `${what} must be at least ${durationText(min)}, not ${String(value)}.`);
  return ms;
}

function target(node: Node, line: number, at: LineOf): Target {
  const entries = mapEntries(node, line, 'a notify entry (webhook: <url> or command: [program, args…])', at);
  if (entries.length !== 1) throw new Problem(line, 'a notify entry is one of webhook: <url> or command: [program, args…].');
  const [[pair, keyLine]] = entries as [[(typeof entries)[number][0], number]];
  const key = keyName(pair, keyLine, 'notify entry');
  const valueLine = pair.value ? at(pair.value) : keyLine;
  if (key === 'webhook') {
    const url = text_(pair.value, valueLine, 'webhook');
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Problem(valueLine, 'webhook must be an http(s) address.');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Problem(valueLine, `webhook must be an http(s) address, not ${parsed.protocol.slice(0, -1)}.`);
    return { webhook: url };
  }
  if (key === 'command') {
    if (!isSeq(pair.value) || pair.value.items.length === 0) {
      throw new Problem(valueLine, 'command must be a list: the program, then its arguments ([mail, -s, "savedq alert", ops@example.com]); no shell reads it.');
    }
    return { command: (pair.value.items as Node[]).map((item) => valueText(item, at(item), 'each part of command', false)) };
  }
  throw unknownKey(key, ['webhook', 'command'], 'a notify entry', keyLine);
}

/** Reads an alert file (docs/alerts.md): every problem with its line; a file with any problem is no alert. */
export function readAlertFile(file: string, text: string): ReadAlertFile {
  const name = basename(file).slice(0, -ALERT_FILE_SUFFIX.length);
  const problems: DefinitionProblem[] = [];
  const problem = (line: number, message: string) => problems.push({ file, line, message });
  if (!NAME_PATTERN.test(name)) problem(1, `${name} is not an alert name: lowercase letters, digits, ".", "_" and "-", as a saved query's.`);
  const read = yamlKeysOf(text, 'an alert file', ['description', 'query', 'params', 'when', 'when_sql', 'every', 'for', 'repeat', 'notify']);
  if ('message' in read) return { problems: [...problems, { file, ...read }] };
  const { root, at } = read;
  let description: string | undefined;
  let query: string | undefined;
  let params: [string, string][] = [];
  let when: string | undefined;
  let whenSql: string | undefined;
  let everyMs: number | undefined;
  let forMs = 0;
  let repeatMs: number | undefined;
  let notify: Target[] | undefined;
  const at_ = { query: 1, params: 1, condition: 1 };
  const condition = (key: 'when' | 'when_sql') => (value: Node | null, line: number) => {
    // A number or a boolean is an expression too (`when: 1` always fires).
    const given = scalarValue(value);
    const text = typeof given === 'string' ? given : typeof given === 'bigint' || typeof given === 'number' || typeof given === 'boolean' ? String(given) : undefined;
    if (text === undefined || text.trim() === '') throw new Problem(line, `${key} must be ${key === 'when' ? 'an expression over a row of the answer' : 'a SELECT over result'}, not ${describeNode(value)}.`);
    if (key === 'when') when = text;
    else whenSql = text;
    at_.condition = line;
  };
  readKeys(mapEntries(root, 1, 'the alert file', at), {
    description: (value, line) => void (description = text_(value, line, 'description')),
    query: (value, line) => {
      query = text_(value, line, 'query');
      at_.query = line;
    },
    params: (value, line) => {
      at_.params = line;
      params = mapEntries(value, line, 'params', at).map(([p, pLine]) => {
        const param = keyName(p, pLine, 'parameter name');
        return [param, isNull(p.value) ? '' : valueText(p.value, p.value ? at(p.value) : pLine, `parameter '${param}'`, true)];
      });
    },
    when: condition('when'),
    when_sql: condition('when_sql'),
    every: (value, line) => void (everyMs = duration(value, line, 'every', MIN_EVERY_MS)),
    for: (value, line) => void (forMs = duration(value, line, 'for', 0)),
    repeat: (value, line) => void (repeatMs = duration(value, line, 'repeat', MIN_EVERY_MS)),
    notify: (value, line) => {
      if (!isSeq(value) || value.items.length === 0) {
        throw new Problem(line, 'notify must be a list of where to send notifications (webhook: <url>, command: [program, args…]); an alert that tells no one is no alert.');
      }
      notify = [];
      for (const item of value.items as Node[]) {
        try {
          notify.push(target(item, at(item), at));
        } catch (err) {
          if (!(err instanceof Problem)) throw err;
          problem(err.line, err.message);
        }
      }
    },
  }, 'the alert file', at, problem);
  const missing = (key: string, message: string) => {
    if (!problems.some((p) => p.message.startsWith(`${key} `))) problem(1, message);
  };
  if (query === undefined) missing('query', 'no query: an alert names the saved query it looks at (query: functions.invocation-stats).');
  if (when !== undefined && whenSql !== undefined) problem(at_.condition, 'give when or when_sql, not both.');
  if (when === undefined && whenSql === undefined) missing('when', 'no when: an alert says when it fires (when: error_count > 0, or when_sql: SELECT … FROM result).');
  if (everyMs === undefined) missing('every', 'no every: an alert says how often it is looked at (every: 5m; at least 1m).');
  if (notify === undefined) missing('notify', 'no notify: an alert says whom it tells (notify: [{webhook: https://…}, {command: [mail, …]}]).');
  if (problems.length > 0 || query === undefined || everyMs === undefined || notify === undefined) {
    const call = query !== undefined && (when === undefined) !== (whenSql === undefined) ? { file, query, params, when, whenSql, lines: at_ } : undefined;
    return { problems: problems.sort((a, b) => a.line - b.line), ...(call ? { call } : {}) };
  }
  return { alert: { name, file, description, query, params, when, whenSql, everyMs, forMs, repeatMs, notify, lines: at_ } };
}

/** Where a webhook goes, as it may be shown: its host (the rest of its address may be a secret). */
export function targetText(t: Target): string {
  if ('command' in t) return `command ${t.command[0] ?? ''}`;
  try {
    const url = new URL(t.webhook);
    return `webhook ${url.protocol}//${url.host}/…`;
  } catch {
    return 'webhook (an address that does not parse)';
  }
}
