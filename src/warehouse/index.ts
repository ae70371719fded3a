import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import type { Config } from '../config.js';
import { BusyError, WarehouseError } from '../errors.js';
import { readSqlFile } from '../endpoints/sql.js';
import { toWarehouseError } from './errors.js';

/** One row as ClickHouse returns it in JSONEachRow. */
export type WarehouseRow = Record<string, unknown>;

/** The log tables `load` writes to. */
export const TABLES = ['edge_logs', 'function_edge_logs'] as const;
export type TableName = (typeof TABLES)[number];

/** Settings every query runs with: ISO timestamps, and 64-bit counts as JSON numbers. */
const BASE_SETTINGS: ClickHouseSettings = {
  date_time_output_format: 'iso',
  output_format_json_quote_64bit_integers: 0,
};

/** The ClickHouse behind savedq: the embedded engine on a data directory, or a server by URL. */
export interface Warehouse {
  /** Where the data is, for messages; never contains a password. */
  readonly location: string;
  query(
    sql: string,
    params: Record<string, unknown>,
    settings?: ClickHouseSettings,
    signal?: AbortSignal,
  ): Promise<WarehouseRow[]>;
  insert(table: TableName, rows: readonly object[], settings?: ClickHouseSettings): Promise<void>;
  close(): Promise<void>;
}

/** Opens the warehouse the configuration names and makes sure the log tables exist. */
export async function openWarehouse(config: Config): Promise<Warehouse> {
  const warehouse = config.url === undefined ? await openEmbedded(config) : await openServer(config.url);
  try {
    for (const statement of schemaStatements()) await warehouse.query(statement, {});
  } catch (err) {
    await warehouse.close().catch(() => undefined);
    throw err;
  }
  return warehouse;
}

/** The CREATE TABLE statements of `sql/schema.sql`. */
export function schemaStatements(): string[] {
  return readSqlFile('schema.sql')
    .replace(/^\s*--.*$/gm, '')
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** A URL with its password removed, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '<invalid URL>';
  }
}

async function openServer(url: string): Promise<Warehouse> {
  const { createClient, ClickHouseLogLevel } = await import('@clickhouse/client');
  const location = `ClickHouse at ${redactUrl(url)}`;
  let client: ClickHouseClient;
  try {
    client = createClient({
      url,
      clickhouse_settings: BASE_SETTINGS,
      request_timeout: 300_000,
      // Errors reach the caller as savedq errors; the client's own logging would print them twice.
      log: { level: ClickHouseLogLevel.OFF },
    });
  } catch (err) {
    throw new WarehouseError(`invalid ClickHouse URL ${redactUrl(url)}.`, { cause: err });
  }
  return wrapClient(client, location);
}

function wrapClient(client: ClickHouseClient, location: string): Warehouse {
  return {
    location,
    async query(sql, params, settings, signal) {
      try {
        const result = await client.query({
          query: sql,
          format: 'JSONEachRow',
          query_params: params,
          clickhouse_settings: settings,
          abort_signal: signal,
        });
        return await result.json<WarehouseRow>();
      } catch (err) {
        throw toWarehouseError(err, location);
      }
    },
    async insert(table, rows, settings) {
      try {
        await client.insert({ table, values: rows as object[], format: 'JSONEachRow', clickhouse_settings: settings });
      } catch (err) {
        throw toWarehouseError(err, location);
      }
    },
    async close() {
      await client.close();
    },
  };
}

const LOCK_POLL_MS = 100;

/** The process named in the engine's status file, when that process is still alive. */
function holderOf(dataDir: string): { pid: number; since: string } | undefined {
  try {
    const status = readFileSync(`${dataDir}/status`, 'utf8');
    const pid = Number(/PID:\s*(\d+)/.exec(status)?.[1]);
    if (!pid || pid === process.pid) return undefined;
    process.kill(pid, 0);
    return { pid, since: /Started at:\s*(.+)/.exec(status)?.[1]?.trim() ?? '' };
  } catch {
    return undefined;
  }
}

function prepareDataDir(dataDir: string): void {
  try {
    if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) {
      throw new WarehouseError(`data directory ${dataDir} is not a directory.`);
    }
    mkdirSync(dataDir, { recursive: true });
    accessSync(dataDir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (err) {
    if (err instanceof WarehouseError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : code === 'ENOTDIR' ? 'a parent is not a directory' : (code ?? String(err));
    throw new WarehouseError(`cannot use data directory ${dataDir}: ${reason}.`, { cause: err });
  }
}

/**
 * The embedded engine admits one process per data directory. While another live process holds it, wait
 * (polling its status file, so the engine is not asked and does not print its own complaint) up to the
 * configured bound, then fail naming the holder.
 */
async function openEmbedded(config: Config): Promise<Warehouse> {
  const { dataDir } = config;
  prepareDataDir(dataDir);
  const [{ createClient, ClickHouseLogLevel }, { createChdbConnection }] = await Promise.all([
    import('@clickhouse/client'),
    import('chdb/connection'),
  ]);
  const deadline = Date.now() + config.lockWaitMs;
  for (;;) {
    const holder = holderOf(dataDir);
    if (!holder) {
      try {
        const connection = inDirectory(dataDir, () => createChdbConnection({ path: dataDir }));
        // chdb declares the Connection type of @clickhouse/client-common, which the client now bundles as
        // its own copy: the same shape under two names, hence the cast.
        const client = createClient({
          connection: connection as unknown as NonNullable<Parameters<typeof createClient>[0]>['connection'],
          clickhouse_settings: BASE_SETTINGS,
          log: { level: ClickHouseLogLevel.OFF },
        });
        return wrapClient(client, `the embedded engine at ${dataDir}`);
      } catch (err) {
        // Lost a race for the lock to another process that started at the same moment: wait as usual.
        if (!holderOf(dataDir)) throw toWarehouseError(err, `the embedded engine at ${dataDir}`);
      }
    }
    if (Date.now() >= deadline) {
      const h = holderOf(dataDir);
      const who = h ? `process ${h.pid}${h.since ? ` (started ${h.since})` : ''}` : 'another process';
      throw new BusyError(
        `data directory ${dataDir} is in use by ${who}; gave up after ${config.lockWaitMs / 1000} s (see --lock-wait).`,
      );
    }
    await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
  }
}

/**
 * The engine reads a `config.xml` from the current directory when it starts; start it from the data
 * directory (which holds none) so a stray file where the user stands cannot reconfigure it.
 */
function inDirectory<T>(dir: string, fn: () => T): T {
  const previous = process.cwd();
  if (existsSync(`${dir}/config.xml`)) throw new WarehouseError(`data directory ${dir} holds a config.xml; remove it.`);
  process.chdir(dir);
  try {
    return fn();
  } finally {
    process.chdir(previous);
  }
}
