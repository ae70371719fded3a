import { resolveTableWidth } from '../config.js';
import type { Savedq } from '../library.js';
import { displayPath } from '../queries/catalog.js';
import { describeText } from '../output/describe.js';
import { colorOf, type CommonOptions, type Io } from './io.js';

/** `savedq describe <name|id>`: where a saved query comes from, its parameters, fields, cache and SQL. */
export async function describeCommand(lib: Savedq, nameOrId: string, options: CommonOptions, io: Io): Promise<void> {
  // Every definition is read, so a broken one is reported (describe is not on anyone's hot path).
  await lib.savedQueries();
  const q = await lib.catalog.find(nameOrId);
  // On a terminal its prose fits the terminal's width; piped, each piece is one line, for grep.
  const width = io.stdout.isTTY === true ? resolveTableWidth(io.stdout.columns, io.env) : undefined;
  io.stdout.write(describeText(q, { color: colorOf(io, options), from: displayPath(q.file), width }));
}
