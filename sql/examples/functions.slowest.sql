/*
description: The slowest functions of one project by their 95th percentile execution time.
params:
  project:
    type: string
    required: true
    description: Project reference (metadata.project_ref).
  hours:
    type: integer
    default: 24
    min: 1
    max: 2160
    description: How many hours back to look.
  min_invocations:
    type: integer
    default: 10
    min: 1
    description: Leave out functions invoked fewer times than this.
  slower_than_ms:
    type: number
    min: 0
    description: Only functions whose p95 is above this many milliseconds; absent = all.
fields:
  function_id: { type: string, description: The function. }
  invocations: { type: integer }
  p50_ms: { type: number, description: Median execution time (ms). }
  p95_ms: { type: number, description: 95th percentile execution time (ms). }
  max_ms: { type: number, description: Slowest invocation (ms). }
  error_rate: { type: number, description: Share of invocations answered with status 400 or more. }
cache: 600
warm: 300
*/
SELECT
    function_id,
    count() AS invocations,
    quantileExact(0.5)(execution_time_ms) AS p50_ms,
    quantileExact(0.95)(execution_time_ms) AS p95_ms,
    max(execution_time_ms) AS max_ms,
    round(countIf(status_code >= 400) / count(), 4) AS error_rate
FROM function_edge_logs
WHERE project = @project
  AND timestamp > @now - toIntervalHour(@hours)
GROUP BY function_id
HAVING invocations >= @min_invocations
   AND (@slower_than_ms IS NULL OR p95_ms > @slower_than_ms)
ORDER BY p95_ms DESC, function_id
