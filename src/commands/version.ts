import { copyFileSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cannotWriteText } from '../errno.js';
import { InputError } from '../errors.js';
import type { Savedq } from '../library.js';
import { displayPath } from '../queries/catalog.js';
import { withVersion } from '../queries/raise-version.js';
import { splitVersion, versionRef } from '../queries/version-ref.js';
import { testFileOf } from '../testing/spec.js';
import { report, type CommonOptions, type Io } from './io.js';

/**
 * `savedq version <name>`: keeps the query's current version callable as `<name>@<N>.sql` beside it (its
 * tests too) and raises the current file's version to N+1, for the change that would break its callers
 * (docs/queries.md, "Versions"). Both files or neither: the copy is removed when the raise cannot be written.
 */
export async function versionCommand(lib: Savedq, nameOrId: string, options: CommonOptions, io: Io): Promise<string> {
  if (splitVersion(nameOrId.trim()).version !== undefined) {
    throw new InputError(`savedq version takes a query's name, not a version of it: savedq version ${splitVersion(nameOrId.trim()).key} keeps its current version and raises it.`);
  }
  const query = await lib.catalog.find(nameOrId);
  if (query.builtin) throw new InputError(`${query.name} is a built-in query: its versions are savedq's. Copy its file into your queries folder under a name of your own to change it.`);
  const kept = join(dirname(query.file), `${versionRef(query)}.sql`);
  if (existsSync(kept)) throw new InputError(`${displayPath(kept)} already exists: version ${query.version} of ${query.name} is kept there; raise the version: in ${displayPath(query.file)} by hand.`);
  const text = readFileSync(query.file, 'utf8');
  const raised = withVersion(text, query.version + 1);
  const aside = `${query.file}.${process.pid}.tmp`;
  try {
    // The copy first, never over a file (another process's); then the raise, whole, renamed over the file.
    writeFileSync(kept, text, { flag: 'wx' });
    writeFileSync(aside, raised);
    renameSync(aside, query.file);
  } catch (err) {
    rmSync(aside, { force: true });
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') rmSync(kept, { force: true });
    throw new InputError(`cannot keep version ${query.version} of ${query.name}: ${cannotWriteText(err, kept)}.`);
  }
  // Its tests go with it: each version is its own test subject.
  const tests = testFileOf(query.file);
  const keptTests = testFileOf(kept);
  const testsToo = existsSync(tests) && !existsSync(keptTests);
  if (testsToo) {
    try {
      copyFileSync(tests, keptTests);
    } catch {
      // The versions are whole without it: said below.
    }
  }
  report(
    io,
    options,
    `kept version ${query.version} of ${query.name} in ${displayPath(kept)}${testsToo && existsSync(keptTests) ? ` (its tests in ${displayPath(keptTests)})` : ''}; ${displayPath(query.file)} is version ${query.version + 1} now: change it, and callers that must stay call ${versionRef(query)}`,
  );
  return kept;
}
