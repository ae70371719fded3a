// The floor a saved query is measured against: open the same engine on the same data directory with
// the same client and run the same SQL with the same parameters and settings, print the rows.
import { createClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';

const [dataDir, sql, params] = process.argv.slice(2);
const client = createClient({
  connection: createChdbConnection({ path: dataDir }),
  clickhouse_settings: { date_time_output_format: 'iso', output_format_json_quote_64bit_integers: 0 },
});
const result = await client.query({ query: sql, format: 'JSONEachRow', query_params: JSON.parse(params) });
process.stdout.write(JSON.stringify(await result.json()));
await client.close();
