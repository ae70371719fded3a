/*
id: c3e8f1a0-6b2d-4d7e-a9f5-1e4b8c2d7a23
description: Time-bucketed counts of requests to a project, split by API area.
params:
  project:
    type: regex
    required: true
    description: RE2 regular expression; a request counts when its URL contains a match.
  interval:
    type: string
    required: true
    allowed: [minutely, hourly, daily]
    other: reject
    description: 'minutely: last 60 minutes by minute; hourly: last hour by hour; daily: last 7 days by day.'
fields:
  timestamp: { type: timestamp, description: 'Start of the bucket, ISO 8601 UTC.' }
  total_rest_requests: { type: integer, description: Requests whose path contains /rest. }
  total_storage_requests: { type: integer, description: Requests whose path contains /storage. }
  total_auth_requests: { type: integer, description: Requests whose path contains /auth. }
  total_realtime_requests: { type: integer, description: Requests whose path contains /realtime. }
max_rows: 1000
cache: 900
warm: 300
*/
-- usage.api-counts: requests to a project per bucket, split by API area. `project` is an RE2
-- pattern matched against the request URL; a request raises every counter whose area its path
-- contains, or none.
WITH
    multiIf(@interval = 'minutely', 'minute',
            @interval = 'hourly', 'hour',
            'day') AS granularity,
    @now - toIntervalSecond(multiIf(@interval = 'minutely', 3600,
                                    @interval = 'hourly', 3600,
                                    604800)) AS window_start
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
