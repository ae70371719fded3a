-- functions.invocation-stats: per-bucket statistics of one project's function invocations.
-- The bucket array runs every step of the granularity from trunc(now - span) to trunc(now); an
-- invocation belongs to the bucket equal to its truncated timestamp, so filtering on that range is
-- the same as joining to the array, and lets the primary key skip everything older.
WITH
    multiIf(@interval = '5min', 'second',
            @interval IN ('15min', '1hr'), 'minute',
            @interval = '7day', 'day',
            'hour') AS granularity,
    multiIf(@interval = '5min', 300,
            @interval = '15min', 900,
            @interval = '1hr', 3600,
            @interval = '7day', 604800,
            86400) AS span_seconds,
    dateTrunc(granularity, @now - toIntervalSecond(span_seconds)) AS first_bucket,
    dateTrunc(granularity, @now) AS last_bucket
SELECT
    bucket AS timestamp,
    min(execution_time_ms) AS min_execution_time,
    max(execution_time_ms) AS max_execution_time,
    -- Summed as decimals (to the nanosecond), which is exact: the engine sums in parallel in no fixed
    -- order, and a float sum would differ in its last bits from run to run.
    toFloat64(sum(toDecimal128(execution_time_ms, 6)) / count()) AS avg_execution_time,
    quantileExact(0.95)(execution_time_ms) AS p95_execution_time,
    quantileExact(0.99)(execution_time_ms) AS p99_execution_time,
    count() AS count,
    countIf(status_code >= 400) AS error_count
FROM
(
    SELECT dateTrunc(granularity, timestamp) AS bucket, execution_time_ms, status_code
    FROM function_edge_logs
    WHERE project = @project
      AND (@function_id = '' OR function_id = @function_id)
      AND timestamp >= first_bucket
)
WHERE bucket <= last_bucket
GROUP BY bucket
ORDER BY bucket
