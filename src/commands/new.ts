import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../errors.js';
import { makeDirectory } from '../fs.js';
import { nodeCrypto } from '../lazy.js';
import type { Savedq } from '../library.js';
import { displayPath } from '../queries/catalog.js';
import { NAME_PATTERN } from '../queries/types.js';
import { testFileOf } from '../testing/spec.js';
import { report, type CommonOptions, type Io } from './io.js';

/** Options of `savedq new`. */
export interface NewOptions extends CommonOptions {
  readonly name: string;
}

/** A starter definition: every header key, each explained, over a query that runs as written. */
export function starterDefinition(name: string, id: string): string {
  return `/*
# ${name}: a saved query of savedq. Edit the header and the SQL, then run: savedq check
description: Requests per status code of one project in the last days.
id: ${id}  # fixed: HTTP and the cache know the query by it
params:                    # each is @name in the SQL below; types: string regex integer number boolean timestamp date string[]
  project:
    type: string
    required: true
    description: Project reference.
  days:
    type: integer
    default: 1
    min: 1
    max: 90
    description: How many days back to count.
fields:                    # the row fields, for describe and OpenAPI; check holds the answer to them
  status_code: { type: integer, description: HTTP status code of the response. }
  requests: { type: integer, description: Requests answered with it. }
max_rows: 1000
cache: 0                   # seconds a result is kept; 0 = never cached
warm: 0                    # seconds after which warm refreshes a cached result; 0 = never
*/
SELECT status_code, count() AS requests
FROM edge_logs
WHERE project = @project
  AND timestamp > @now - toIntervalDay(@days)
GROUP BY status_code
ORDER BY requests DESC
`;
}

/**
 * A starter test of the starter definition (docs/testing.md): fixtures with an event of another project and
 * one outside the window, and cases that pass as written.
 */
export function starterTest(name: string): string {
  return `# Tests of ${name}: savedq test ${name}. Each case calls the query with its params, as of at, on a
# warehouse of its own that holds only the fixtures below (README, "Testing your saved queries").
at: 2026-11-20T12:00:00Z          # @now of every case: a test never reads the clock
fixtures:
  edge_logs:                      # events as savedq load takes them, or the path of an NDJSON file
    - { timestamp: 2026-11-20T11:00:00Z, project: acme, metadata: { response: { status_code: 200 } } }
    - { timestamp: 2026-11-20T10:30:00Z, project: acme, metadata: { response: { status_code: 200 } } }
    - { timestamp: 2026-11-20T09:00:00Z, project: acme, metadata: { response: { status_code: 404 } } }
    - { timestamp: 2026-11-19T11:00:00Z, project: acme, metadata: { response: { status_code: 500 } } }    # 25 hours before at
    - { timestamp: 2026-11-20T11:00:00Z, project: globex, metadata: { response: { status_code: 503 } } }  # another project
cases:
  - name: counts the project's requests of the last day by status code
    params: { project: acme }
    rows:                         # exactly these rows, in this order, as run -f json prints them
      - { status_code: 200, requests: 2 }
      - { status_code: 404, requests: 1 }
  - name: two days reach the request of the day before
    params: { project: acme, days: 2 }
    row_count: 3
  - name: a project is required
    params: {}
    error: input                  # refused before anything runs, as run exits 2 for it
`;
}

/**
 * \`savedq new <name>\`: writes a starter definition with a fresh id, and its starter test, into the first
 * user folder (made if need be) and returns the definition's path. Never overwrites a file, nor takes
 * the name of an existing query.
 */
export async function newCommand(lib: Savedq, options: NewOptions, io: Io): Promise<string> {
  const { name } = options;
  if (!NAME_PATTERN.test(name)) {
    throw new InputError(`invalid name ${JSON.stringify(name)}: lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64.`);
  }
  const dir = lib.config.newQueriesDir;
  // The folder this makes, missing, is no problem to warn of.
  const taken = (await lib.savedQueries([dir])).queries.find((q) => q.name === name);
  if (taken) throw new InputError(`a saved query named ${name} already exists: ${displayPath(taken.file)}.`);
  const file = join(dir, `${name}.sql`);
  const testFile = testFileOf(file);
  for (const f of [file, testFile]) if (existsSync(f)) throw new InputError(`${displayPath(f)} already exists; nothing written.`);
  try {
    makeDirectory(dir);
    writeFileSync(file, starterDefinition(name, nodeCrypto().randomUUID()), { flag: 'wx' });
    writeFileSync(testFile, starterTest(name), { flag: 'wx' });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new InputError(`${displayPath(file)} already exists; not overwritten.`);
    throw new InputError(`cannot write ${displayPath(file)}: ${code ?? String(err)}.`);
  }
  io.stdout.write(`${file}\n`);
  report(io, options, `wrote a starter definition, ${displayPath(file)}, and its test, ${displayPath(testFile)}: edit them, then savedq check && savedq test ${name}`);
  return file;
}
