/*
description: Requests per day to the projects whose URLs match a pattern, between two dates.
params:
  url:
    type: regex
    required: true
    description: RE2 pattern; a request counts when its URL contains a match.
  since:
    type: date
    required: true
    description: First day (UTC), YYYY-MM-DD.
  until:
    type: date
    description: Last day (UTC), YYYY-MM-DD; absent = today.
  errors_only:
    type: boolean
    default: false
    description: Count only responses with status 400 or more.
fields:
  day: { type: date }
  requests: { type: integer }
  projects: { type: integer, description: Distinct projects among them. }
cache: 900
warm: 300
# Callers may ask the answer their own question: --sql / ?sql= over the table result.
sandbox: true
*/
SELECT
    toDate(timestamp) AS day,
    count() AS requests,
    uniqExact(project) AS projects
FROM edge_logs
WHERE timestamp >= toDateTime64(@since, 6, 'UTC')
  AND toDate(timestamp) <= ifNull(@until, toDate(@now))
  AND match(request_url, @url)
  AND (NOT @errors_only OR status_code >= 400)
GROUP BY day
ORDER BY day
