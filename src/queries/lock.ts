import { InputError } from '../errors.js';
import { columnShape, fieldTypeOf, type EngineColumn } from './shape.js';
import type { FieldType, ParamDefinition, SavedQuery } from './types.js';
import { splitVersion } from './version-ref.js';

// What callers rely on, locked (docs/queries.md, "The lock"): savedq.lock.json holds each saved query's
// name, id, version, parameters and fields, in a stable order, for version control; `check --against`
// lists what changed since, each change breaking or compatible.

/** The lock's file name, in the first of the user's queries folders. */
export const LOCK_FILE = 'savedq.lock.json';
/** The lock format's version: a newer one is refused by name. */
const LOCK_FORMAT = 1;

/** A parameter as locked: what a caller's values must be. */
export interface LockedParam {
  readonly type: string;
  readonly required: boolean;
  readonly allowed?: readonly string[];
  readonly other?: 'reject' | 'default';
  readonly min?: number;
  readonly max?: number;
}

/** A field as locked: its type and whether it may be null. */
export interface LockedField {
  readonly type: FieldType;
  readonly nullable: boolean;
}

/** A saved query as locked. */
export interface LockedQuery {
  readonly id: string;
  readonly version: number;
  /** The definition's digest (its SQL, parameters and row limit): a change of it alone is compatible. */
  readonly digest: string;
  readonly params: Readonly<Record<string, LockedParam>>;
  readonly fields: Readonly<Record<string, LockedField>>;
  /** An older version's sunset (ISO 8601): removing it past then breaks no caller. */
  readonly sunset?: string;
}

/** The lock: every saved query by name, each older version kept callable as `name@N`. */
export interface Lock {
  readonly savedq_lock: number;
  readonly queries: Readonly<Record<string, LockedQuery>>;
}

/** One change between a lock and the folder. */
export interface LockChange {
  readonly query: string;
  readonly kind: 'breaking' | 'compatible';
  readonly what: string;
}

const sorted = <T>(entries: [string, T][]): Record<string, T> => Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

function lockedParam(p: ParamDefinition): LockedParam {
  return {
    type: p.type,
    required: p.required,
    ...(p.allowed ? { allowed: [...p.allowed].sort(), other: p.other } : {}),
    ...(p.min !== undefined ? { min: p.min } : {}),
    ...(p.max !== undefined ? { max: p.max } : {}),
  };
}

/**
 * A saved query as locked: its parameters; its fields as declared (each nullable as the engine's
 * column says), or the engine's columns when it declares none (what callers read all the same).
 */
export function lockedQuery(query: SavedQuery, columns: readonly EngineColumn[]): LockedQuery {
  const byName = new Map(columns.map((c) => [c.name, c]));
  const fields: [string, LockedField][] =
    query.fields.length > 0
      ? query.fields.map((f) => {
          const column = byName.get(f.name);
          return [f.name, { type: f.type, nullable: column ? columnShape(column.type).nullable : false }];
        })
      : columns.map((c) => [c.name, { type: fieldTypeOf(c), nullable: columnShape(c.type).nullable }]);
  return {
    id: query.id,
    version: query.version,
    digest: query.digest,
    params: sorted(query.params.map((p) => [p.name, lockedParam(p)])),
    fields: sorted(fields),
    ...(query.sunsetMs !== undefined ? { sunset: new Date(query.sunsetMs).toISOString() } : {}),
  };
}

/** The lock's text: two-space JSON, queries, parameters and fields by name, one key a line (a diff reads as what changed). */
export function lockText(queries: readonly [string, LockedQuery][]): string {
  const lock: Lock = { savedq_lock: LOCK_FORMAT, queries: sorted([...queries]) };
  return `${JSON.stringify(lock, null, 2)}\n`;
}

/** A lock file's text read: a lock, or an InputError naming the file and what is wrong. */
export function readLock(text: string, file: string): Lock {
  let lock: unknown;
  try {
    lock = JSON.parse(text);
  } catch (err) {
    throw new InputError(`${file} is not JSON (${(err as Error).message}): write it again with savedq lock.`);
  }
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(lock) || typeof lock['savedq_lock'] !== 'number' || !isObject(lock['queries'])) throw new InputError(`${file} is not a savedq lock: write one with savedq lock.`);
  if (lock['savedq_lock'] > LOCK_FORMAT) throw new InputError(`${file} was written by a newer savedq (lock format ${lock['savedq_lock']}; this one reads ${LOCK_FORMAT}).`);
  for (const [name, q] of Object.entries(lock['queries'])) {
    if (!isObject(q) || typeof q['id'] !== 'string' || typeof q['version'] !== 'number' || !isObject(q['params']) || !isObject(q['fields'])) throw new InputError(`${file}: query ${name} is not as savedq lock writes it: write the lock again.`);
  }
  return lock as unknown as Lock;
}

const list = (values: readonly string[]) => values.join(', ');

/** What changed in a parameter: each change, breaking (a value a caller sends may now be refused or mean another thing) or compatible. */
function paramChanges(name: string, was: LockedParam, now: LockedParam): [LockChange['kind'], string][] {
  const changes: [LockChange['kind'], string][] = [];
  if (was.type !== now.type) changes.push(['breaking', `parameter ${name}: ${was.type} → ${now.type}`]);
  if (!was.required && now.required) changes.push(['breaking', `parameter ${name} made required`]);
  if (was.required && !now.required) changes.push(['compatible', `parameter ${name} made optional`]);
  if (now.allowed && !was.allowed) changes.push(['breaking', `parameter ${name}: allowed values narrowed to ${list(now.allowed)}`]);
  if (was.allowed && !now.allowed) changes.push(['compatible', `parameter ${name}: any value allowed`]);
  if (was.allowed && now.allowed) {
    const removed = was.allowed.filter((v) => !now.allowed?.includes(v));
    const added = now.allowed.filter((v) => !was.allowed?.includes(v));
    if (removed.length > 0) changes.push(['breaking', `parameter ${name}: allowed values narrowed (${list(removed)} removed)`]);
    if (added.length > 0) changes.push(['compatible', `parameter ${name}: allowed values widened (${list(added)} added)`]);
    if (was.other === 'default' && now.other === 'reject') changes.push(['breaking', `parameter ${name}: a value outside allowed now refused`]);
    if (was.other === 'reject' && now.other === 'default') changes.push(['compatible', `parameter ${name}: a value outside allowed now taken as the default`]);
  }
  if (now.min !== undefined && (was.min === undefined || now.min > was.min)) changes.push(['breaking', `parameter ${name}: min raised to ${now.min}`]);
  if (was.min !== undefined && (now.min === undefined || now.min < was.min)) changes.push(['compatible', `parameter ${name}: min ${now.min === undefined ? 'removed' : `lowered to ${now.min}`}`]);
  if (now.max !== undefined && (was.max === undefined || now.max < was.max)) changes.push(['breaking', `parameter ${name}: max lowered to ${now.max}`]);
  if (was.max !== undefined && (now.max === undefined || now.max > was.max)) changes.push(['compatible', `parameter ${name}: max ${now.max === undefined ? 'removed' : `raised to ${now.max}`}`]);
  return changes;
}

/** What changed in one query between the lock (`was`) and the folder (`now`). */
function queryChanges(was: LockedQuery, now: LockedQuery): [LockChange['kind'], string][] {
  const changes: [LockChange['kind'], string][] = [];
  if (was.id !== now.id) changes.push(['breaking', `id ${was.id} → ${now.id}`]);
  for (const [name, p] of Object.entries(was.params)) {
    const next = now.params[name];
    if (next === undefined) changes.push(['breaking', `parameter ${name} removed`]);
    else changes.push(...paramChanges(name, p, next));
  }
  for (const [name, p] of Object.entries(now.params)) {
    if (was.params[name] === undefined) changes.push(p.required ? ['breaking', `parameter ${name} added, required`] : ['compatible', `parameter ${name} added`]);
  }
  for (const [name, f] of Object.entries(was.fields)) {
    const next = now.fields[name];
    if (next === undefined) changes.push(['breaking', `field ${name} removed`]);
    else {
      if (next.type !== f.type) changes.push(['breaking', `field ${name}: ${f.type} → ${next.type}`]);
      if (!f.nullable && next.nullable) changes.push(['breaking', `field ${name} may now be null`]);
      if (f.nullable && !next.nullable) changes.push(['compatible', `field ${name} is never null now`]);
    }
  }
  for (const name of Object.keys(now.fields)) if (was.fields[name] === undefined) changes.push(['compatible', `field ${name} added`]);
  if (changes.length === 0 && was.digest !== now.digest) changes.push(['compatible', 'the SQL changed, the same shape']);
  if (now.version !== was.version) changes.push(['compatible', `version ${was.version} → ${now.version}`]);
  return changes;
}

/**
 * What a query of the folder is held to: its own entry in the lock; for an older version newly kept
 * (`name@N`), the lock's current `name` when that was version N (a kept version keeps what it promised).
 */
function lockedBefore(was: Lock, query: string): LockedQuery | undefined {
  const own = was.queries[query];
  if (own !== undefined) return own;
  const { key, version } = splitVersion(query);
  const current = version === undefined ? undefined : was.queries[key];
  return current?.version === version ? current : undefined;
}

/** Every change between a lock and the folder's queries, by query name, breaking first within each. */
export function lockChanges(was: Lock, now: Readonly<Record<string, LockedQuery>>, nowMs = Date.now()): LockChange[] {
  const changes: LockChange[] = [];
  const names = [...new Set([...Object.keys(was.queries), ...Object.keys(now)])].sort();
  for (const query of names) {
    const before = lockedBefore(was, query);
    const after = now[query];
    const retired = before?.sunset !== undefined && Date.parse(before.sunset) <= nowMs;
    if (after === undefined) changes.push(retired ? { query, kind: 'compatible', what: `retired (past its sunset, ${before?.sunset?.slice(0, 10)})` } : { query, kind: 'breaking', what: 'query removed' });
    else if (before === undefined) changes.push({ query, kind: 'compatible', what: 'query added' });
    else {
      const found = queryChanges(before, after);
      for (const kind of ['breaking', 'compatible'] as const) for (const [k, what] of found) if (k === kind) changes.push({ query, kind, what });
    }
  }
  return changes;
}

/** The queries with a breaking change whose version was not raised: what fails `check --against`. */
export function unversionedBreaking(was: Lock, now: Readonly<Record<string, LockedQuery>>, changes: readonly LockChange[]): string[] {
  const raised = (name: string) => {
    const before = lockedBefore(was, name);
    const after = now[name];
    return before !== undefined && after !== undefined && after.version > before.version;
  };
  return [...new Set(changes.filter((c) => c.kind === 'breaking' && !raised(c.query)).map((c) => c.query))];
}
