/*
id: 5a9d3e71-2c84-4b6f-8e1d-7c0b9a4f2e12
description: Time-bucketed statistics of serverless function invocations of one project.
params:
  project:
    type: string
    required: true
    description: Project reference (metadata.project_ref) of the invocations.
  function_id:
    type: string
    description: Only invocations of this function; absent or empty = all functions.
  interval:
    type: string
    allowed: [5min, 15min, 1hr, 1day, 7day]
    other: default
    default: 1day
    description: 'Span and bucket: 5min by second, 15min and 1hr by minute, 1day by hour, 7day by day; any other value behaves as 1day.'
fields:
  timestamp: { type: timestamp, description: 'Start of the bucket, ISO 8601 UTC.' }
  min_execution_time: { type: number, description: Minimum execution time (ms). }
  max_execution_time: { type: number, description: Maximum execution time (ms). }
  avg_execution_time: { type: number, description: Average execution time (ms). }
  p95_execution_time: { type: number, description: Execution time (ms) at the 95th percentile rank. }
  p99_execution_time: { type: number, description: Execution time (ms) at the 99th percentile rank. }
  count: { type: integer, description: Invocations in the bucket. }
  error_count: { type: integer, description: Invocations answered with status code >= 400. }
max_rows: 1000
cache: 900
warm: 300
*/
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
    dateTrunc(granularity, @now - toIntervalSecond(span_seconds))
        AS first_bucket,
    dateTrunc(granularity, @now) AS last_bucket
SELECT
    bucket AS timestamp,
    min(execution_time_ms) AS min_execution_time,
    max(execution_time_ms) AS max_execution_time,
    -- Summed as decimals (to the nanosecond), which is exact: the engine sums in parallel in no fixed
    -- order, and a float sum would differ in its last bits from run to run.
    toFloat64(sum(toDecimal128(execution_time_ms, 6)) / count())
        AS avg_execution_time,
    quantileExact(0.95)(execution_time_ms) AS p95_execution_time,
    quantileExact(0.99)(execution_time_ms) AS p99_execution_time,
    count() AS count,
    countIf(status_code >= 400) AS error_count
FROM
(
    SELECT dateTrunc(granularity, timestamp) AS bucket,
           execution_time_ms, status_code
    FROM function_edge_logs
    WHERE project = @project
      AND (@function_id = '' OR function_id = @function_id)
      AND timestamp >= first_bucket
)
WHERE bucket <= last_bucket
GROUP BY bucket
ORDER BY bucket
