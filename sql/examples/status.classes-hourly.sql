/*
description: Responses of one or more projects per hour, by status class (2xx, 3xx, 4xx, 5xx).
params:
  projects:
    type: string[]
    required: true
    description: Project references, comma-separated.
  from:
    type: timestamp
    description: Start of the range (exclusive); absent = 24 hours before now.
  to:
    type: timestamp
    description: End of the range (inclusive); absent = now.
fields:
  hour: { type: timestamp, description: Start of the hour. }
  project: { type: string }
  ok_2xx: { type: integer }
  redirect_3xx: { type: integer }
  client_4xx: { type: integer }
  server_5xx: { type: integer }
max_rows: 5000
cache: 300
warm: 120
*/
SELECT
    toStartOfHour(timestamp) AS hour,
    project,
    countIf(status_code BETWEEN 200 AND 299) AS ok_2xx,
    countIf(status_code BETWEEN 300 AND 399) AS redirect_3xx,
    countIf(status_code BETWEEN 400 AND 499) AS client_4xx,
    countIf(status_code >= 500) AS server_5xx
FROM edge_logs
WHERE has(@projects, project)
  AND timestamp > ifNull(@from, @now - toIntervalHour(24))
  AND timestamp <= ifNull(@to, @now)
GROUP BY hour, project
ORDER BY hour, project
