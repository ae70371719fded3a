/*
id: 0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01
description: 'The newest 100 edge log entries of one project, within its tier''s retention window. Its SQL stops at 100 entries (truncated stays false): to read further back, call again with iso_timestamp_end set to the oldest timestamp returned, which is inclusive: leave out the entries of that instant already read (by id).'
params:
  project:
    type: string
    required: true
    description: Project reference; only its entries are returned.
  project_tier:
    type: string
    allowed: [FREE, PRO, PAYG, ENTERPRISE]
    other: default
    default: FREE
    description: 'Retention window: FREE 1 day, PRO 7 days, PAYG and ENTERPRISE 90 days; any other value 1 day.'
  iso_timestamp_start:
    type: timestamp
    description: ISO 8601; only entries strictly after it.
  iso_timestamp_end:
    type: timestamp
    description: ISO 8601; only entries at or before it.
fields:
  id: { type: string, description: Identifier (UUID) of the log entry. }
  timestamp: { type: timestamp, description: 'Time of the entry, ISO 8601 UTC with microseconds.' }
  event_message: { type: string, description: Text message of the entry. }
  metadata: { type: object, description: Nested structure attached to the entry. }
max_rows: 1000
cache: 0
warm: 0
*/
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
