import { InputError } from '../errors.js';
import type { Savedq } from '../library.js';
import { schemaDdl } from '../warehouse/ddl.js';
import { report, type CommonOptions, type Io } from './io.js';

/** Options of `savedq schema` and `savedq init`. */
export interface SchemaOptions extends CommonOptions {
  /** DDL for a ClickHouse cluster of this name. */
  readonly cluster?: string | undefined;
}

/** `savedq schema [--cluster <name>]`: prints the DDL of the two tables. */
export function schemaCommand(options: SchemaOptions, io: Io): void {
  io.stdout.write(`${schemaDdl(options.cluster).join(';\n\n')};\n`);
}

/** `savedq init --url … [--cluster <name>]`: applies that DDL to a ClickHouse server or cluster. */
export async function initCommand(lib: Savedq, options: SchemaOptions, io: Io): Promise<void> {
  if (lib.config.url === undefined) {
    throw new InputError('init needs a ClickHouse server: give --url or SAVEDQ_CLICKHOUSE_URL (the embedded engine creates its tables itself).');
  }
  const { openWarehouse } = await import('../warehouse/index.js');
  const warehouse = await openWarehouse(lib.config, { createTables: false });
  try {
    for (const statement of schemaDdl(options.cluster)) {
      await warehouse.command(statement);
      report(io, options, `applied: ${statement.split('\n')[0]}`);
    }
  } finally {
    await warehouse.close();
  }
}
