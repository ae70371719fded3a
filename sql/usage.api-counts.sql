-- usage.api-counts: requests to a project per bucket, split by API area. `project` is an RE2
-- pattern matched against the request URL; a request raises every counter whose area its path
-- contains, or none.
WITH
    multiIf(@interval = 'minutely', 'minute', @interval = 'hourly', 'hour', 'day') AS granularity,
    @now - toIntervalSecond(multiIf(@interval = 'minutely', 3600, @interval = 'hourly', 3600, 604800)) AS window_start
SELECT
    bucket AS timestamp,
    countIf(position(request_path, '/rest') > 0) AS total_rest_requests,
    countIf(position(request_path, '/storage') > 0) AS total_storage_requests,
    countIf(position(request_path, '/auth') > 0) AS total_auth_requests,
    countIf(position(request_path, '/realtime') > 0) AS total_realtime_requests
FROM
(
    SELECT dateTrunc(granularity, timestamp) AS bucket, request_path
    FROM edge_logs
    WHERE timestamp >= window_start
      AND match(request_url, @project)
)
GROUP BY bucket
ORDER BY bucket
