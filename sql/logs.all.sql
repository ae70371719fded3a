-- logs.all: the newest edge log entries of one project, inside the retention window of its tier
-- and the optional (start, end] range. Not cached.
SELECT id, timestamp, event_message, metadata
FROM edge_logs
WHERE project = @project
  AND timestamp > @now - toIntervalDay(multiIf(
        @project_tier = 'PRO', 7,
        @project_tier IN ('PAYG', 'ENTERPRISE'), 90,
        1))
  AND (@iso_timestamp_start IS NULL OR timestamp > @iso_timestamp_start)
  AND (@iso_timestamp_end IS NULL OR timestamp <= @iso_timestamp_end)
ORDER BY timestamp DESC
LIMIT 100
