import { InputError } from '../errors.js';
import type { Warehouse } from '../warehouse/index.js';
import { makeTables, type TableName } from '../warehouse/schema.js';
import { MARK_COLUMN, type ComputedColumn } from './statements.js';

/** What a load needs to know of a table. */
export interface TableShape {
  /** The MATERIALIZED columns the insert computes itself (none on a server: its table may be Distributed). */
  readonly computed: readonly ComputedColumn[];
  /** The expression the table is partitioned by (`tuple()` for none). */
  readonly partitionKey: string;
}

/**
 * What a load needs to know of a table, asked once. A missing table is made first, so no batch is sent
 * only to be refused. A table made by a savedq from before rows carried their batch's mark gets the
 * column of sql/schema.sql (a change of metadata only); a Distributed one cannot be changed through
 * itself, so the user is told what to run.
 */
export async function readTableShape(warehouse: Pick<Warehouse, 'query' | 'command' | 'embedded'>, logTable: TableName, table: string = logTable): Promise<TableShape> {
  const ask = () =>
    Promise.all([
      warehouse.query(
        'SELECT name, default_kind, default_expression FROM system.columns WHERE database = currentDatabase() AND table = {table:String} ORDER BY position',
        { table },
      ),
      warehouse.query('SELECT engine, partition_key FROM system.tables WHERE database = currentDatabase() AND name = {table:String}', { table }),
    ]);
  let [columns, tables] = await ask();
  if (columns.length === 0) {
    await makeTables(warehouse);
    [columns, tables] = await ask();
  }
  if (!columns.some((c) => c.name === MARK_COLUMN)) {
    if (String(tables[0]?.engine ?? '') === 'Distributed') {
      throw new InputError(
        `${table} has no ${MARK_COLUMN} column (it was made by an older savedq): add it to ${table}_local ON CLUSTER and to ${table}, as \`savedq schema --cluster\` shows, then load again.`,
      );
    }
    await warehouse.command(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${MARK_COLUMN} UInt64, ADD INDEX IF NOT EXISTS load_batch_bloom ${MARK_COLUMN} TYPE bloom_filter GRANULARITY 4`);
  }
  const materialized = columns
    .filter((c) => c.default_kind === 'MATERIALIZED')
    .map((c) => ({ name: String(c.name), expression: String(c.default_expression) }));
  return {
    // On a server, or with a name that needs quoting (none of ours does): the table computes them.
    computed: warehouse.embedded && materialized.every((c) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(c.name)) ? materialized : [],
    partitionKey: String(tables[0]?.partition_key ?? '') || 'tuple()',
  };
}
