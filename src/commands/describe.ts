import type { Savedq } from '../library.js';
import { displayPath } from '../queries/catalog.js';
import { describeText } from '../output/describe.js';
import { colorOf, proseWidth, type CommonOptions, type Io } from './io.js';

/** `savedq describe <name|id>`: where a saved query comes from, its parameters, fields, cache and SQL. */
export async function describeCommand(lib: Savedq, nameOrId: string, options: CommonOptions, io: Io): Promise<void> {
  // Every definition is read, so a broken one is reported (describe is not on anyone's hot path).
  await lib.savedQueries();
  const q = await lib.catalog.find(nameOrId);
  io.stdout.write(describeText(q, { color: colorOf(io, options), from: displayPath(q.file), width: proseWidth(io) }));
}
