// The closest peer, for `npm run bench` alone: @hypequery/serve (a dev dependency) answering one saved
// query's SQL over HTTP, from a ClickHouse URL, as its README shows (initServe, a zod input, the query
// builder's rawQuery, its Node handler). Nothing cached: every request is a query.
//
//   node bench/peer-server.mjs <clickhouse-url> <query-name>   prints `listening <port>` on 127.0.0.1
//
// GET /api/<query-name>?<param>=<value>… runs the built-in query's SQL, each {name:Type} of it
// CAST(? AS Type) with the value substituted by @hypequery/clickhouse, `now` the request's instant:
// the statement savedq's serve sends, but for the parameters bound in the text rather than beside it.
import { createQueryBuilder } from '@hypequery/clickhouse';
import { initServe, toNodeHandler } from '@hypequery/serve';
import http from 'node:http';
import { z } from 'zod/v3';
import { QueryCatalog } from '../dist/queries/catalog.js';
import { builtinQueriesDir } from '../dist/package.js';

const [url, name] = process.argv.slice(2);
const definition = (await new QueryCatalog({ builtin: builtinQueriesDir, user: [] }).scan()).byName.get(name);
if (!url || !definition) {
  process.stderr.write('usage: peer-server.mjs <clickhouse-url> <built-in query name>\n');
  process.exit(2);
}
const order = [];
const sql = definition.boundSql.replace(/\{(\w+):([^}]+)\}/g, (_, param, type) => {
  order.push(param);
  return `CAST(? AS ${type})`;
});
const inputs = Object.fromEntries(definition.params.map((param) => [param.name, z.string()]));
/** The instant as savedq binds it: 'YYYY-MM-DD hh:mm:ss.ffffff' in UTC. */
const now = () => `${new Date().toISOString().replace('T', ' ').replace('Z', '')}000`;

const db = createQueryBuilder({ url, username: 'default', password: '', database: 'default' });
const { query, serve } = initServe({ context: () => ({ db }), basePath: '/api' });
const answer = query({
  input: z.object(inputs),
  query: ({ ctx, input }) => {
    const at = now();
    return ctx.db.rawQuery(sql, order.map((param) => (param === 'now' ? at : input[param])));
  },
});
const api = serve({ queries: { answer } });
api.route(`/${name}`, api.queries.answer, { method: 'GET' });
// Its Node adapter on a server of Node's own (startServer does not say which port 0 became).
const server = http.createServer(toNodeHandler(api));
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
