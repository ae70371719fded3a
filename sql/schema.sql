-- The two log tables. Idempotent: run on first use. `metadata` is kept whole as JSON text (logs.all
-- returns it); the fields the endpoints filter and aggregate on are typed columns extracted from it
-- once, at insert time. Sorting by (project, timestamp) lets a query for one project read only
-- that project's time range; weekly partitions let time-only filters skip whole weeks. Granules of
-- 1024 rows (not 8192) keep the read for one project of many small even when a project has only a few
-- thousand rows a week.
--
-- `load_batch` is how `savedq load` stores every row once, however a load is cut short: each row
-- carries the mark of the batch of input lines it came in (a digest of the lines), and a batch stores
-- only the rows of the partitions that hold none of its rows yet. The engine writes each of a batch's
-- partitions as one part, whole or not at all, so loading a batch again stores exactly what a load
-- killed midway did not. The bloom filter finds a batch's rows without reading the column whole.

CREATE TABLE IF NOT EXISTS edge_logs
(
    id UUID,
    timestamp DateTime64(6, 'UTC') CODEC(Delta, ZSTD(1)),
    project LowCardinality(String),
    event_message String CODEC(ZSTD(1)),
    metadata String CODEC(ZSTD(1)),
    request_url String MATERIALIZED JSONExtractString(metadata, 'request', 'url') CODEC(ZSTD(1)),
    request_path String MATERIALIZED JSONExtractString(metadata, 'request', 'path') CODEC(ZSTD(1)),
    request_method LowCardinality(String) MATERIALIZED JSONExtractString(metadata, 'request', 'method'),
    status_code UInt16 MATERIALIZED JSONExtractUInt(metadata, 'response', 'status_code'),
    load_batch UInt64,
    INDEX timestamp_minmax timestamp TYPE minmax GRANULARITY 1,
    INDEX load_batch_bloom load_batch TYPE bloom_filter GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toMonday(timestamp)
ORDER BY (project, timestamp)
SETTINGS index_granularity = 1024;

CREATE TABLE IF NOT EXISTS function_edge_logs
(
    id UUID,
    timestamp DateTime64(6, 'UTC') CODEC(Delta, ZSTD(1)),
    project LowCardinality(String),
    event_message String CODEC(ZSTD(1)),
    metadata String CODEC(ZSTD(1)),
    function_id String MATERIALIZED JSONExtractString(metadata, 'function_id'),
    execution_time_ms Float64 MATERIALIZED JSONExtractFloat(metadata, 'execution_time_ms'),
    status_code UInt16 MATERIALIZED JSONExtractUInt(metadata, 'response', 'status_code'),
    load_batch UInt64,
    INDEX timestamp_minmax timestamp TYPE minmax GRANULARITY 1,
    INDEX load_batch_bloom load_batch TYPE bloom_filter GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toMonday(timestamp)
ORDER BY (project, timestamp)
SETTINGS index_granularity = 1024;
