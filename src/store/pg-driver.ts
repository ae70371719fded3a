// What savedq uses of node-postgres and keyv's PostgreSQL adapter, in one module: the build makes it a
// bundle of its own (dist/store-pg.cjs, esbuild.config.mjs), which only a run with a store URL loads
// (store/load-pg.ts).
import KeyvPostgres from '@keyv/postgres';
import pg from 'pg';

export { KeyvPostgres, pg };
