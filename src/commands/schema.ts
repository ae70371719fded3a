import type { Savedq } from '../library.js';
import { init, schemaOf } from '../admin.js';
import { report, type CommonOptions, type Io } from './io.js';

/** Options of `savedq schema` and `savedq init`. */
export interface SchemaOptions extends CommonOptions {
  /** DDL for a ClickHouse cluster of this name. */
  readonly cluster?: string | undefined;
}

/** `savedq schema [--cluster <name>]`: prints the DDL of the two tables. */
export async function schemaCommand(options: SchemaOptions, io: Io): Promise<void> {
  io.stdout.write(`${(await schemaOf(options.cluster)).join(';\n\n')};\n`);
}

/** `savedq init [--store …] [--url … [--cluster <name>]]`: makes savedq's tables in the store, applies that DDL to a ClickHouse server or cluster. */
export async function initCommand(lib: Savedq, options: SchemaOptions, io: Io): Promise<void> {
  await init(lib, options.cluster, (step) => report(io, options, step));
}
