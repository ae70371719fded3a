/**
 * SQL both backends run as it is written: `?` for each parameter, `{name}` for each of savedq's
 * tables (the SQLite file's `savedq_name`, PostgreSQL's `<schema>.name`), and only what SQLite and
 * PostgreSQL both take (ON CONFLICT … DO UPDATE, RETURNING, CAST … AS INTEGER).
 */
export interface SqlSession {
  all<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a statement; how many rows it changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
  /** Runs `work` in one transaction that takes the write lock at once (one writer at a time). */
  transaction<T>(work: (tx: SqlSession) => Promise<T>): Promise<T>;
}

/** SQL of {name} tables with each name made `table(name)`. */
export function withTables(sql: string, table: (name: string) => string): string {
  return sql.replace(/\{([a-z_]+)\}/g, (_, name: string) => table(name));
}

/** A session whose every statement first awaits `session()` (a store opened, or refused by name, on first use). */
export function sessionWhenReady(session: () => Promise<SqlSession>): SqlSession {
  return {
    all: async (sql, params) => (await session()).all(sql, params),
    run: async (sql, params) => (await session()).run(sql, params),
    transaction: async (work) => (await session()).transaction(work),
  };
}
