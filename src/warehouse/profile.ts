import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { WarehouseError } from '../errors.js';
import { bytesText } from '../words.js';
import type { HostUser, Statement } from './types.js';

// What a server's user may set (CONTRACT §20): operators give dashboards and services a user whose
// profile is read-only (`readonly=1`: no setting may be changed at all; `readonly=2`: any but
// `readonly`), or bounds settings (`<constraints>`: a most, a least, a value fixed). ClickHouse refuses
// a statement that changes a setting past what its profile allows (Code 164 READONLY, Code 452
// SETTING_CONSTRAINT_VIOLATION) before it runs. savedq learns a host's profile from the host itself
// (system.settings, the user's own view of each setting: its value, its bounds, whether it may be
// changed) the first time the host refuses a setting, and from then on sends each statement as the
// profile lets it: a setting lowered or raised to its bound, or not sent, its purpose kept another way
// where there is one.

/** A bound a profile puts on a setting. */
export interface SettingBound {
  readonly min?: number;
  readonly max?: number;
  /** The profile fixes the setting: it is not sent. */
  readonly fixed?: true;
}

/** What a host's user may set, as far as savedq has asked. */
export interface HostProfile {
  /** 0: any setting; 1: none, and only reads run; 2: any but `readonly`, and only reads run. */
  readonly readonly: 0 | 1 | 2;
  readonly bounds: ReadonlyMap<string, SettingBound>;
  /** The server's time zone: a DateTime without one of its own is written in it (a read-only user's answers). */
  readonly timezone: string;
  /** The settings asked about so far. */
  readonly known: ReadonlySet<string>;
}

/** What savedq assumes of a host until it refuses a setting: a user that may set anything. */
export const ANY_SETTING: HostProfile = { readonly: 0, bounds: new Map(), timezone: 'UTC', known: new Set() };

/** The engine's codes of a setting its user's profile refuses: READONLY, SETTING_CONSTRAINT_VIOLATION. */
const PROFILE_CODES: ReadonlySet<number> = new Set([164, 452]);

/** A statement refused because of a setting its user's profile does not allow (or a write by a read-only user). */
export function isProfileRefusal(err: unknown): boolean {
  return err instanceof WarehouseError && PROFILE_CODES.has(err.engine?.code ?? 0);
}

/** The user's own view of each setting asked about: the engine's, not a reading of its messages. */
const PROFILE_SQL = 'SELECT name, value, min, max, readonly, timezone() AS timezone FROM system.settings WHERE name IN {names:Array(String)}';

/**
 * Asks a host what its user may set of `names` (and its readonly level, and its time zone), added to
 * what was known. Sent with no setting at all, so that any user may ask it.
 */
export async function learnProfile(client: ClickHouseClient, names: Iterable<string>, known: HostProfile, signal?: AbortSignal): Promise<HostProfile> {
  const asked = [...new Set(['readonly', ...names])];
  const result = await client.query({ query: PROFILE_SQL, query_params: { names: asked }, format: 'JSONEachRow', ...(signal ? { abort_signal: signal } : {}) });
  const rows = await result.json<{ name: string; value: string; min: string | null; max: string | null; readonly: number | string; timezone: string }>();
  const bounds = new Map(known.bounds);
  let readonly = known.readonly;
  let timezone = known.timezone;
  for (const row of rows) {
    timezone = row.timezone || timezone;
    if (row.name === 'readonly') readonly = Number(row.value) === 1 ? 1 : Number(row.value) >= 2 ? 2 : 0;
    const bound: { min?: number; max?: number; fixed?: true } = {};
    if (Number(row.readonly) === 1) bound.fixed = true;
    if (row.min !== null && row.min !== '' && Number.isFinite(Number(row.min))) bound.min = Number(row.min);
    if (row.max !== null && row.max !== '' && Number.isFinite(Number(row.max))) bound.max = Number(row.max);
    if (Object.keys(bound).length > 0) bounds.set(row.name, bound);
    else bounds.delete(row.name);
  }
  return { readonly, bounds, timezone, known: new Set([...known.known, ...asked]) };
}

/** What a profile changed of a statement's settings. */
export interface SettingChange {
  readonly name: string;
  readonly from: unknown;
  /** The value sent instead; undefined: the setting was not sent. */
  readonly to: number | undefined;
}

/** The settings a profile lets be sent, and what it changed of them. */
export function withinProfile(settings: ClickHouseSettings | undefined, profile: HostProfile): { settings: ClickHouseSettings | undefined; changes: SettingChange[] } {
  if (settings === undefined || (profile.readonly === 0 && profile.bounds.size === 0)) return { settings, changes: [] };
  const kept: Record<string, unknown> = {};
  const changes: SettingChange[] = [];
  for (const [name, value] of Object.entries(settings)) {
    if (value === undefined) continue;
    const bound = profile.bounds.get(name);
    if (profile.readonly === 1 || (profile.readonly === 2 && name === 'readonly') || bound?.fixed === true) {
      changes.push({ name, from: value, to: undefined });
      continue;
    }
    const number = typeof value === 'number' || (typeof value === 'string' && /^\d+(\.\d+)?$/.test(value)) ? Number(value) : undefined;
    if (number !== undefined && bound?.max !== undefined && number > bound.max) {
      kept[name] = bound.max;
      changes.push({ name, from: value, to: bound.max });
    } else if (number !== undefined && bound?.min !== undefined && number < bound.min) {
      kept[name] = bound.min;
      changes.push({ name, from: value, to: bound.min });
    } else kept[name] = value;
  }
  return { settings: Object.keys(kept).length > 0 ? (kept as ClickHouseSettings) : undefined, changes };
}

/**
 * A definition's limits that a host cannot apply (its user is read-only, or its profile fixes or
 * raises the setting): refused before anything runs. `settings` are the engine's names of them.
 */
export class UnsettableError extends WarehouseError {
  constructor(
    readonly settings: readonly string[],
    readonly readonlyLevel: 0 | 1 | 2,
    message: string,
    options: { forCaller?: string } = {},
  ) {
    super(message, { forCaller: options.forCaller ?? "the warehouse's user cannot apply this query's limits." });
  }
}

/** The settings whose changes a person is told of (a limit lowered, or not set): the rest are savedq's own housekeeping. */
const TOLD: ReadonlySet<string> = new Set(['max_execution_time', 'max_memory_usage', 'max_rows_to_read', 'max_bytes_to_read', 'max_result_bytes', 'max_threads']);

/** A change of a limit said as a person reads it; undefined for a change no one needs told. */
export function changeText(change: SettingChange, profile: HostProfile): string | undefined {
  if (!TOLD.has(change.name)) return undefined;
  if (change.to !== undefined) {
    const from = Number(change.from);
    const amount = (n: number) => (change.name === 'max_execution_time' ? `${Math.ceil(n)} s` : change.name.endsWith('_bytes') || change.name === 'max_memory_usage' ? bytesText(n) : String(n));
    return `${change.name} ${change.to < from ? 'lowered' : 'raised'} to ${amount(change.to)} (from ${amount(from)}) by the warehouse user's profile`;
  }
  if (change.name === 'max_execution_time') return `${change.name} kept by savedq, not the warehouse (its user ${profile.readonly === 1 ? 'is read-only' : "has it fixed"})`;
  return `${change.name} not set (the warehouse user ${profile.readonly === 1 ? 'is read-only' : 'has it fixed'})`;
}

/**
 * A statement as a host's profile lets it be sent (the request's own settings with it): its settings
 * within bounds; for a user that may set nothing, its tag (log_comment) in a leading comment of its
 * text, which system.query_log keeps, and its row limit (the `limit` setting) a LIMIT around it. A
 * setting in `required` (a definition's limits) that cannot be sent as asked refuses the statement.
 */
export function asProfileAllows(statement: Statement, profile: HostProfile, location: string): { statement: Statement; changes: SettingChange[] } {
  const own = withinProfile(statement.settings, profile);
  const request = withinProfile(statement.requestSettings, profile);
  const unsettable = (statement.required ?? []).filter((name) => {
    const change = own.changes.find((c) => c.name === name);
    return change !== undefined && (change.to === undefined || change.to > Number(change.from));
  });
  if (unsettable.length > 0) {
    const why = profile.readonly === 1 ? 'its user is read-only (readonly=1), so no setting can be sent there' : "its user's profile fixes or bounds them";
    throw new UnsettableError(unsettable, profile.readonly, `${location} cannot apply ${unsettable.join(', ')}: ${why}.`);
  }
  if (profile.readonly === 1 && statement.format !== undefined && statement.format !== 'JSONEachRow') {
    throw new WarehouseError(`${location}: its user is read-only (readonly=1), so savedq cannot set the Parquet and Arrow writers' settings there (text as strings, Arrow uncompressed); export NDJSON or CSV, or give the user a profile with readonly=2 (docs/scaling.md).`, {
      forCaller: "the warehouse's user is read-only: export NDJSON or CSV.",
    });
  }
  let sql = statement.sql;
  const dropped = (name: string) => own.changes.some((c) => c.name === name && c.to === undefined);
  const limit = statement.settings?.limit;
  if (limit !== undefined && dropped('limit')) sql = `SELECT * FROM (\n${sql}\n) LIMIT ${Number(limit)}`;
  const tag = statement.settings?.log_comment;
  // A comment's end in the tag would end the comment: JSON may escape the slash.
  if (typeof tag === 'string' && dropped('log_comment')) sql = `/* savedq ${tag.replace(/\*\//g, '*\\/')} */\n${sql}`;
  return {
    statement: { ...statement, sql, settings: own.settings, requestSettings: request.settings, ...(profile.readonly === 1 ? { plain: { timezone: profile.timezone } } : {}) },
    changes: own.changes,
  };
}

/** The settings savedq sends a server (those a query's run, an export, a check and a load may carry): what `savedq status` asks a host about. */
export const SENT_SETTINGS: readonly string[] = [
  'log_comment', 'readonly', 'max_execution_time', 'max_memory_usage', 'limit', 'max_rows_to_read', 'max_bytes_to_read', 'max_result_bytes', 'max_threads',
  'date_time_output_format', 'output_format_json_quote_64bit_integers', 'cancel_http_readonly_queries_on_client_close',
];

/** A host's user as /health and `savedq status` say it: what its profile restricts of what savedq sends, and the cost; undefined for a user that may set anything. */
export function hostUser(profile: HostProfile): HostUser | undefined {
  const bounds = Object.fromEntries([...profile.bounds].filter(([name]) => SENT_SETTINGS.includes(name) && profile.readonly !== 1));
  if (profile.readonly === 0 && Object.keys(bounds).length === 0) return undefined;
  const costs: string[] = [];
  if (profile.readonly === 1) {
    costs.push(
      'no setting is sent: savedq keeps the time limit itself (it closes the connection at the deadline and sends KILL QUERY), and sets no memory limit',
      "a definition's limits: are refused (a profile with readonly=2 lets savedq set them)",
      'exports in NDJSON and CSV only (Parquet and Arrow need their writers\' settings)',
      "each statement's tag is a comment at the head of its text in system.query_log, not its log_comment",
    );
  } else if (profile.readonly === 2) {
    costs.push("a caller's SQL runs under the user's readonly=2, not the stricter readonly=1 savedq would set");
  }
  const amount = (name: string, n: number) => (name === 'max_execution_time' ? `${n} s` : name.endsWith('_bytes') || name === 'max_memory_usage' ? bytesText(n) : String(n));
  for (const [name, bound] of Object.entries(bounds)) {
    if (bound.fixed) costs.push(`${name} is fixed by the profile: savedq sends none`);
    if (bound.max !== undefined) costs.push(`${name} at most ${amount(name, bound.max)}: savedq's is lowered to it, and a run says so`);
    if (bound.min !== undefined) costs.push(`${name} at least ${amount(name, bound.min)}: savedq's is raised to it, and a run says so`);
  }
  return { readonly: profile.readonly, bounds, costs };
}
