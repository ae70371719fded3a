import { schemaStatements } from './index.js';

/**
 * The DDL of the log tables. Without a cluster: `sql/schema.sql` as it is. With one: each table becomes
 * a `ReplicatedMergeTree` table `<name>_local` on every node (ON CLUSTER) and a `Distributed` table
 * `<name>` over them, sharded by project so one project's rows stay on one shard; the endpoints query
 * `<name>` unchanged.
 */
export function schemaDdl(cluster?: string): string[] {
  const statements = schemaStatements();
  if (cluster === undefined) return statements;
  const on = `ON CLUSTER ${quoteIdentifier(cluster)}`;
  return statements.flatMap((statement) => {
    const name = /CREATE TABLE IF NOT EXISTS (\w+)/.exec(statement)?.[1];
    if (!name) return [statement];
    const local = statement
      .replace(`CREATE TABLE IF NOT EXISTS ${name}`, `CREATE TABLE IF NOT EXISTS ${name}_local ${on}`)
      .replace(
        'ENGINE = MergeTree',
        `ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/${name}_local', '{replica}')`,
      )
      // Replicated tables deduplicate inserts by default (replicated_deduplication_window).
      .replace(/, non_replicated_deduplication_window = \d+/, '');
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
