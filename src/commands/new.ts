import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { InputError } from '../errors.js';
import { makeDirectory } from '../fs.js';
import type { Savedq } from '../library.js';
import { displayPath } from '../queries/catalog.js';
import { NAME_PATTERN } from '../queries/types.js';
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
id: ${id}                 # fixed: HTTP and the cache know the query by it
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
fields:                    # the row fields, for describe and OpenAPI
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
 * \`savedq new <name>\`: writes a starter definition with a fresh id into the first user folder (made if
 * need be) and returns its path. Never overwrites a file, nor takes the name of an existing query.
 */
export async function newCommand(lib: Savedq, options: NewOptions, io: Io): Promise<string> {
  const { name } = options;
  if (!NAME_PATTERN.test(name)) {
    throw new InputError(`invalid name ${JSON.stringify(name)}: lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64.`);
  }
  const taken = (await lib.queries.scan()).queries.find((q) => q.name === name);
  if (taken) throw new InputError(`a saved query named ${name} already exists: ${displayPath(taken.file)}.`);
  const dir = lib.config.newQueriesDir;
  const file = join(dir, `${name}.sql`);
  try {
    makeDirectory(dir);
    writeFileSync(file, starterDefinition(name, randomUUID()), { flag: 'wx' });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new InputError(`${displayPath(file)} already exists; not overwritten.`);
    throw new InputError(`cannot write ${displayPath(file)}: ${code ?? String(err)}.`);
  }
  io.stdout.write(`${file}\n`);
  report(io, options, 'wrote a starter definition: edit it, then check it with savedq check');
  return file;
}
