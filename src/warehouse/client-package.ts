// What savedq uses of @clickhouse/client, in one module: the CLI bundles it apart, compiled from a code
// cache of its own (esbuild.config.mjs), as requiring the package's tree of modules took about 60 ms of
// every run that reaches a warehouse (a miss, a stale answer).
export { ClickHouseLogLevel, createClient, EXCEPTION_TAG_HEADER_NAME, extractErrorAtTheEndOfChunk, parseError } from '@clickhouse/client';
