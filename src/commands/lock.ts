import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cannotWriteText, errnoText } from '../errno.js';
import { DefinitionError, InputError } from '../errors.js';
import type { Savedq } from '../library.js';
import { brokenText, displayPath, problemText } from '../queries/catalog.js';
import { LOCK_FILE, lockedQuery, lockText, readLock, type Lock, type LockedQuery } from '../queries/lock.js';
import { callName } from '../queries/version-ref.js';
import { report, type CommonOptions, type Io } from './io.js';

/** Options of `savedq lock`. */
export interface LockOptions extends CommonOptions {
  /** The lock file (`--lock`); default savedq.lock.json in the first of the user's queries folders. */
  readonly lock?: string | undefined;
}

/** The lock file: the one given, else savedq.lock.json in the first of the user's queries folders. */
export function lockFileOf(lib: Savedq, given: string | undefined): string {
  if (given !== undefined) return given;
  const [first] = lib.config.queryFolders;
  if (first === undefined) throw new InputError('there is no queries folder to keep the lock in: give --lock FILE (or --queries DIR).');
  return join(first, LOCK_FILE);
}

/**
 * Every saved query as locked, by name: its answer's columns asked of the engine (described, never
 * run). A broken definition, one the engine refuses, or one whose answer breaks its fields is a
 * DefinitionError: a lock is of a folder that checks.
 */
export async function lockedQueries(lib: Savedq): Promise<[string, LockedQuery][]> {
  const { queries, kept, broken } = await lib.catalog.scan();
  if (broken.length > 0) throw new DefinitionError(`${broken.length === 1 ? 'a definition is' : `${broken.length} definitions are`} broken (savedq check says each): ${brokenText(broken[0] as (typeof broken)[number])}`, { files: broken.map((b) => b.file) });
  const locked: [string, LockedQuery][] = [];
  for (const query of [...queries, ...kept]) {
    const { problems, columns } = await lib.executor.explain(query);
    const [first] = problems;
    if (first !== undefined || columns === undefined) throw new DefinitionError(`${problemText({ file: query.file, line: first?.line ?? 0, message: first?.message ?? 'the engine did not describe its answer.' })} (savedq check says each)`, { files: [query.file] });
    locked.push([callName(query), lockedQuery(query, columns)]);
  }
  return locked;
}

/** The lock file read, or an InputError that names it. */
export function lockOf(file: string): Lock {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new InputError(`cannot read the lock ${displayPath(file)}: ${errnoText(err)}.${(err as NodeJS.ErrnoException).code === 'ENOENT' ? ' Write one with savedq lock.' : ''}`);
  }
  return readLock(text, displayPath(file));
}

/** `savedq lock`: writes savedq.lock.json, what each saved query promises its callers, for version control. */
export async function lockCommand(lib: Savedq, options: LockOptions, io: Io): Promise<string> {
  const file = lockFileOf(lib, options.lock);
  const text = lockText(await lockedQueries(lib));
  let before: string | undefined;
  try {
    before = readFileSync(file, 'utf8');
  } catch {
    before = undefined;
  }
  if (before !== text) {
    // Whole or not at all: written beside it, then renamed over it.
    const aside = `${file}.${process.pid}.tmp`;
    try {
      writeFileSync(aside, text);
      renameSync(aside, file);
    } catch (err) {
      rmSync(aside, { force: true });
      throw new InputError(`cannot write the lock ${displayPath(file)}: ${cannotWriteText(err, file)}.`);
    }
  }
  const n = (JSON.parse(text) as Lock).queries;
  report(io, options, `${before === text ? 'unchanged' : 'wrote'} ${displayPath(file)}: ${Object.keys(n).length} saved queries`);
  return file;
}
