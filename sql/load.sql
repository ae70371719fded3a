-- What `savedq load` makes of each event: the row it stores, or why it refuses the line. Every load
-- rule lives here, and the engine applies them while it parses (on all cores, at its own speed).
--
-- The caller puts the events in place of the placeholder source below, a table of:
--   in_id, in_project, in_message  Nullable(String): the field's text when it is a JSON string, NULL
--                                  when absent or null ('' for an id that is something else);
--   message_not_text               whether event_message is neither a string nor null;
--   in_timestamp                   Dynamic: a string, a number, or None when absent or null;
--   in_metadata                    Nullable(String): an object's JSON text, or a string's text;
--   line_number, blank, not_json, not_object, row_index, suspect: see src/warehouse/load.ts.
-- and sets {project_from_metadata:Bool}: function_edge_logs takes the project from
-- metadata.project_ref, edge_logs from the event's `project`.
SELECT
    line_number,
    blank,
    row_index,
    suspect,
    multiIf(
        not_json, 'not valid JSON',
        not_object, 'not a JSON object',
        dynamicType(in_timestamp) = 'None', 'missing timestamp',
        NOT timestamp_ok, 'invalid timestamp: expected ISO 8601 text or integer microseconds since the epoch',
        NOT id_ok, 'invalid id: expected a UUID',
        NOT metadata_ok, 'invalid metadata: expected an object',
        NOT message_ok, 'invalid event_message: expected a string',
        project = '', if({project_from_metadata:Bool}, 'missing metadata.project_ref', 'missing project'),
        ''
    ) AS reason,
    if(in_id IS NULL, generateUUIDv4(), toUUIDOrZero(in_id)) AS id,
    fromUnixTimestamp64Micro(if(timestamp_ok, micros, 0), 'UTC') AS timestamp,
    if({project_from_metadata:Bool},
        if(JSONType(metadata, 'project_ref') = 'String', JSONExtractString(metadata, 'project_ref'), ''),
        ifNull(in_project, '')) AS project,
    ifNull(in_message, '') AS event_message,
    ifNull(in_metadata, '{}') AS metadata
FROM
(
    WITH
        ifNull(dynamicElement(in_timestamp, 'String'), '') AS text_timestamp,

        -- An ISO 8601 timestamp: a date, optionally a time with up to nine fractional digits (kept to
        -- the microsecond), and Z, an offset, or no zone (= UTC). The shape (and every field's range
        -- but the day's) is checked by one regular expression; the engine's own parser reads the value.
        match(text_timestamp,
            '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([Tt ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.,][0-9]{1,9})?)?)?(Z|z|[+-]([01][0-9]|2[0-3])(:?[0-5][0-9])?)?$'
        ) AS iso_shape,
        toUInt16OrZero(substring(text_timestamp, 1, 4)) AS year,
        toUInt8OrZero(substring(text_timestamp, 6, 2)) AS month,
        toUInt8OrZero(substring(text_timestamp, 9, 2)) AS day,
        iso_shape AND year BETWEEN 1900 AND 2299
            AND day <= multiIf(month = 2, if((year % 4 = 0 AND year % 100 != 0) OR year % 400 = 0, 29, 28), month IN (4, 6, 9, 11), 30, 31) AS iso_ok,
        toUnixTimestamp64Micro(parseDateTime64BestEffortOrZero(replaceOne(upper(text_timestamp), ',', '.'), 6, 'UTC')) AS iso_micros,

        -- Or an integer of microseconds since the epoch: a number that is exact, or a string of digits.
        multiIf(
            dynamicType(in_timestamp) IN ('Int64', 'UInt64', 'Float64'), toFloat64OrNull(toString(in_timestamp)),
            match(text_timestamp, '^-?[0-9]{1,17}$'), toFloat64OrNull(text_timestamp),
            NULL
        ) AS number,
        number = floor(number) AND abs(number) <= 9007199254740991 AS number_ok,

        multiIf(iso_ok, iso_micros, number_ok, toInt64(number), NULL) AS micros,
        -- What a DateTime64(6) holds: 1900-01-01 to 2299-12-31.
        micros IS NOT NULL AND micros BETWEEN -2208988800000000 AND 10413791999999999 AS timestamp_ok,

        in_id IS NULL OR match(in_id, '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$') AS id_ok,
        -- An object, or JSON text of one (as the tables export it).
        in_metadata IS NULL OR JSONType(in_metadata) = 'Object' AS metadata_ok,
        NOT message_not_text AS message_ok
    SELECT *, timestamp_ok, micros, id_ok, metadata_ok, message_ok
    FROM $events
)
