import { readSqlFile } from '../package.js';
import { InputError } from '../errors.js';
import type { Warehouse } from './types.js';

/** The log tables (sql/schema.sql). */
export const TABLES = ['edge_logs', 'function_edge_logs'] as const;
export type TableName = (typeof TABLES)[number];

/** The CREATE TABLE statements of `sql/schema.sql`, in order. */
export function schemaStatements(): string[] {
  return readSqlFile('schema.sql')
    .replace(/^\s*--.*$/gm, '')
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * Whether both log tables exist and hold no row, as the engine's catalog counts them (`system.tables`:
 * nothing is read, and a missing table is not made, as a query would make it). False where it cannot
 * say: a table missing (a server's user may read tables of their own), or one that keeps no count of
 * its rows (a cluster's Distributed table).
 */
export async function logTablesEmpty(warehouse: Pick<Warehouse, 'query'>): Promise<boolean> {
  const [row] = await warehouse.query(
    'SELECT count() AS tables, countIf(total_rows IS NULL) AS uncounted, sum(total_rows) AS n FROM system.tables WHERE database = currentDatabase() AND name IN {names:Array(String)}',
    { names: TABLES },
  );
  return Number(row?.tables) === TABLES.length && Number(row?.uncounted) === 0 && Number(row?.n) === 0;
}

/** Makes the log tables, as far as they are missing. */
export async function makeTables(warehouse: Pick<Warehouse, 'command'>): Promise<void> {
  for (const statement of schemaStatements()) await warehouse.command(statement);
}

/**
 * The DDL of the log tables. Without a cluster: `sql/schema.sql` as it is. With one: each table becomes
 * a `ReplicatedMergeTree` table `<name>_local` on every node (ON CLUSTER) and a `Distributed` table
 * `<name>` over them, sharded by project so one project's rows stay on one shard; the saved queries query
 * `<name>` unchanged.
 */
export function schemaDdl(cluster?: string): string[] {
  const statements = schemaStatements();
  if (cluster === undefined) return statements;
  if (cluster.trim() === '') throw new InputError('--cluster is empty: give the name of a cluster of the server (system.clusters).');
  const on = `ON CLUSTER ${quoteIdentifier(cluster)}`;
  return statements.flatMap((statement) => {
    const name = /CREATE TABLE IF NOT EXISTS (\w+)/.exec(statement)?.[1];
    if (!name) return [statement];
    const local = statement
      .replace(`CREATE TABLE IF NOT EXISTS ${name}`, `CREATE TABLE IF NOT EXISTS ${name}_local ${on}`)
      .replace('ENGINE = MergeTree', `ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/${name}_local', '{replica}')`);
    const distributed =
      `CREATE TABLE IF NOT EXISTS ${name} ${on} AS ${name}_local\n` +
      `ENGINE = Distributed(${quoteLiteral(cluster)}, currentDatabase(), '${name}_local', cityHash64(project))`;
    return [local, distributed];
  });
}

function quoteIdentifier(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `\`${name.replace(/[`\\]/g, '\\$&')}\``;
}

function quoteLiteral(text: string): string {
  return `'${text.replace(/[\\']/g, '\\$&')}'`;
}
