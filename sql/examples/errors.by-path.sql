/*
description: Error responses (status 400 and up) per request path of one project, most first.
params:
  project:
    type: string
    required: true
    description: Project reference.
  days:
    type: integer
    default: 7
    min: 1
    max: 90
    description: How many days back to count.
  method:
    type: string
    allowed: [GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS]
    description: Only requests of this HTTP method; absent = every method.
  top:
    type: integer
    default: 20
    min: 1
    max: 1000
    description: How many paths to return.
fields:
  path: { type: string, description: Request path. }
  errors: { type: integer, description: Responses with status 400 or more. }
  server_errors: { type: integer, description: Of which status 500 or more. }
  last_seen: { type: timestamp, description: The latest of them. }
cache: 300
warm: 120
*/
SELECT
    request_path AS path,
    count() AS errors,
    countIf(status_code >= 500) AS server_errors,
    max(timestamp) AS last_seen
FROM edge_logs
WHERE project = @project
  AND timestamp > @now - toIntervalDay(@days)
  AND status_code >= 400
  AND (@method = '' OR request_method = @method)
GROUP BY path
ORDER BY errors DESC, path
LIMIT @top
