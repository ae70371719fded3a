import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { Savedq } from '../library.js';
import type { SavedQuery } from '../queries/types.js';
import type { EngineColumn } from '../queries/shape.js';
import { cannotWriteText } from '../errno.js';
import { alertsOf, checkTests } from '../admin.js';
import { displayPath, problemText } from '../queries/catalog.js';
import { ChangesBreakError, DefinitionError, InputError } from '../errors.js';
import { sourceLine } from '../queries/run.js';
import { callName } from '../queries/version-ref.js';
import { CHECK_FORMATS } from './choices.js';
import { wrapped } from '../output/wrap.js';
import { proseWidth, report, type CommonOptions, type Io } from './io.js';

/** Options of `savedq check`. */
export interface CheckOptions extends CommonOptions {
  /** `text` (default) or `json`. */
  readonly format?: string | undefined;
  /** Write each user query's `fields:` from the engine's description of its answer (`--write-fields`). */
  readonly writeFields?: boolean | undefined;
  /** A lock to compare the folder with (`--against savedq.lock.json`): each change breaking or compatible. */
  readonly against?: string | undefined;
}

/** What `check` found of one definition file. */
export interface CheckedDefinition {
  /** A saved query's definition, a test file, or an alert file. */
  readonly kind: 'definition' | 'test' | 'alert';
  readonly file: string;
  readonly name: string | null;
  readonly id: string | null;
  readonly ok: boolean;
  /** What is wrong, at which line; for the engine's objections, that line of the SQL. */
  readonly problems: readonly { line: number; message: string; source?: string }[];
}

/**
 * `savedq check`: reads every definition (built-in and the user's), has the engine parse and plan each
 * valid query with its parameters bound, reads the test files of the user's folders (their structure
 * and their query; `savedq test` runs them) and the alert files (their query, parameters and
 * condition, planned by the engine, nothing run), and reports each file `ok` or its problems. Throws a
 * DefinitionError (exit 2) when any is broken; meant for the CI of a team's queries folder.
 */
export async function checkCommand(lib: Savedq, options: CheckOptions, io: Io): Promise<CheckedDefinition[]> {
  if (options.format !== undefined && !(CHECK_FORMATS as readonly string[]).includes(options.format)) {
    throw new InputError(`invalid format ${JSON.stringify(options.format)}: one of ${CHECK_FORMATS.join(', ')}.`);
  }
  const json = options.format === 'json';
  // The broken definitions are this command's report, not warnings beside it: the catalog's own scan.
  const scan = await lib.catalog.scan();
  const { broken } = scan;
  // Every version: an older one kept callable is a definition callers rely on as much as the current one.
  const queries = [...scan.queries, ...scan.kept];
  const checked: CheckedDefinition[] = [];
  const written: string[] = [];
  // Each answer's columns as the engine described them: what --against locks.
  const shapes = new Map<string, EngineColumn[]>();
  for (const query of queries) {
    options.signal?.throwIfAborted();
    const explained = await lib.executor.explain(query);
    let objections = explained.problems;
    if (explained.columns) shapes.set(callName(query), explained.columns);
    // --write-fields: a user's query the engine takes gets the fields of its answer (a built-in is savedq's);
    // one the engine refuses keeps its objection: it has no answer to describe.
    if (options.writeFields === true && !query.builtin && explained.columns && (objections.length > 0 || query.fields.length === 0)) {
      if (await writeFields(query, explained.columns)) {
        written.push(query.file);
        objections = [];
      }
    }
    const problems = objections.map((objection) => {
      const source = sourceLine(query, objection.line);
      return { ...objection, ...(source !== undefined ? { source } : {}) };
    });
    checked.push({ kind: 'definition', file: query.file, name: callName(query), id: query.id, ok: problems.length === 0, problems });
  }
  for (const b of broken) checked.push({ kind: 'definition', file: b.file, name: null, id: null, ok: false, problems: b.problems });
  for (const t of await checkTests(lib)) {
    checked.push({ kind: 'test', file: t.file, name: t.query ? callName(t.query) : null, id: t.query?.id ?? null, ok: t.problems.length === 0, problems: t.problems });
  }

  for (const a of await (await alertsOf(lib)).checkFiles()) {
    options.signal?.throwIfAborted();
    checked.push({ kind: 'alert', file: a.file, name: a.name, id: null, ok: a.problems.length === 0, problems: a.problems });
  }

  const bad = checked.filter((c) => !c.ok);
  if (json) {
    const rows = checked.map((c) => ({ ...c, problems: c.problems.map(({ line, message, source }) => ({ line, message, ...(source !== undefined ? { source } : {}) })) }));
    io.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  } else {
    const width = Math.max(0, ...checked.map((c) => c.name?.length ?? 0));
    // On a terminal a problem's words wrap under its first word; piped, each is one line, for grep.
    const columns = proseWidth(io);
    // The built-ins by that word: their path, in the installed package, only makes the line wrap.
    const builtins = new Set(queries.filter((q) => q.builtin).map((q) => q.file));
    for (const c of checked) {
      if (c.ok) io.stdout.write(`${wrapped(`ok     ${(c.name ?? '').padEnd(width)}  ${builtins.has(c.file) ? 'built-in' : displayPath(c.file)}`, 0, 7, columns)}\n`);
      else for (const p of c.problems) io.stdout.write(`error  ${wrapped(problemText({ file: c.file, ...p }), 7, 7, columns).slice(7)}\n${p.source !== undefined ? `       ${p.line} | ${p.source}\n` : ''}`);
    }
  }
  for (const file of written) io.stderr.write(`wrote the fields of ${displayPath(file)} from the engine's answer\n`);
  const summary = `${checked.length - bad.length} ok, ${bad.length} broken`;
  if (bad.length > 0) throw new DefinitionError(`check: ${summary}.`);
  report(io, options, `check: ${summary}`);
  if (options.against !== undefined) await checkAgainst(queries, shapes, options.against, json, io, options);
  return checked;
}

/**
 * `check --against <lock>`: each change between the lock and the folder, breaking or compatible (JSON:
 * the changes), and a failure (exit 1) when a query changed in a way that breaks its callers without
 * its version raised.
 */
async function checkAgainst(queries: readonly SavedQuery[], shapes: ReadonlyMap<string, EngineColumn[]>, file: string, json: boolean, io: Io, options: CheckOptions): Promise<void> {
  const { lockOf } = await import('./lock.js');
  const { lockChanges, lockedQuery, unversionedBreaking } = await import('../queries/lock.js');
  const was = lockOf(file);
  // The queries as check found them (every one taken by the engine, or check would have failed).
  const now = Object.fromEntries(queries.map((q) => [callName(q), lockedQuery(q, shapes.get(callName(q)) ?? [])]));
  const changes = lockChanges(was, now);
  if (json) io.stdout.write(`${JSON.stringify(changes, null, 2)}\n`);
  else {
    const width = Math.max(0, ...changes.map((c) => c.query.length));
    for (const c of changes) io.stdout.write(`${c.kind.padEnd(10)}  ${c.query.padEnd(width)}  ${c.what}\n`);
  }
  const failing = unversionedBreaking(was, now, changes);
  const breaking = changes.filter((c) => c.kind === 'breaking').length;
  const summary = `${breaking} breaking, ${changes.length - breaking} compatible against ${displayPath(file)}`;
  if (failing.length > 0) {
    throw new ChangesBreakError(`check: ${summary}; ${failing.join(', ')} ${failing.length === 1 ? 'breaks its' : 'break their'} callers with ${failing.length === 1 ? 'its' : 'their'} version not raised: raise it (version: in the header), or keep the change compatible, then savedq lock.`);
  }
  report(io, options, `check: ${summary}`);
}

/** Writes a query's `fields:` from the engine's description of its answer: whether its file changed. */
async function writeFields(query: SavedQuery, columns: readonly EngineColumn[]): Promise<boolean> {
  const text = readFileSync(query.file, 'utf8');
  const { withFieldsWritten } = await import('../queries/write-fields.js');
  const next = withFieldsWritten(text, columns, query.fields);
  if (next === undefined) return false;
  // Whole or not at all: written beside it, then renamed over it.
  const aside = `${query.file}.${process.pid}.tmp`;
  try {
    writeFileSync(aside, next, { mode: statSync(query.file).mode & 0o777 });
    renameSync(aside, query.file);
  } catch (err) {
    rmSync(aside, { force: true });
    throw new InputError(`cannot write ${displayPath(query.file)}: ${cannotWriteText(err, query.file)}.`);
  }
  return true;
}
