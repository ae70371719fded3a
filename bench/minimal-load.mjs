// The engine's own load of an NDJSON file: INSERT ... SELECT ... FROM file(..., JSONEachRow).
import { createClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';

const [dataDir, table, file] = process.argv.slice(2);
const client = createClient({ connection: createChdbConnection({ path: dataDir }) });
await client.command({
  query: `INSERT INTO ${table} (id, timestamp, project, event_message, metadata)
          SELECT id, parseDateTime64BestEffort(timestamp, 6, 'UTC'), project, event_message, metadata
          FROM file('${file}', 'JSONEachRow', 'id UUID, timestamp String, project String, event_message String, metadata String')
          SETTINGS input_format_json_read_objects_as_strings = 1`,
});
await client.close();
