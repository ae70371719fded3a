// A stand-in for a ClickHouse server, for the tests alone (never shipped): ClickHouse's HTTP interface
// as @clickhouse/client speaks it, over the embedded engine (chDB) on a data directory of its own.
// No ClickHouse server that runs savedq's SQL can be installed on these machines (Debian's is 18.16),
// so the server path — several savedq processes on one warehouse URL — runs against this.
//
//   node test/clickhouse-standin.mjs <data-dir>      prints `listening <port>` once it listens on 127.0.0.1
//
// What it takes: a POST (or GET) whose body is the statement, or whose `query` parameter is the statement
// and whose body is an insert's data; `param_<name>` as query parameters; other URL parameters as
// settings. What it answers: the statement's output as the engine writes it (in the statement's FORMAT),
// or a ClickHouse error (`Code: N. DB::Exception: … (TYPE)`, X-ClickHouse-Exception-Code). GET /ping
// answers `Ok.`. GET /__standin/statements lists the statements it ran (for counting queries);
// POST /__standin/forget empties that list.
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createChdbConnection } from 'chdb/connection';

const dataDir = process.argv[2];
if (!dataDir) {
  process.stderr.write('usage: clickhouse-standin.mjs <data-dir>\n');
  process.exit(2);
}
const connection = createChdbConnection({ path: dataDir });
/** Where an insert's data waits for the statement that reads it. */
const inserts = mkdtempSync(join(tmpdir(), 'savedq-standin-'));
let insertCount = 0;
/** Not settings: what @clickhouse/client sends beside them. */
const NOT_SETTINGS = new Set(['query', 'query_id', 'database', 'session_id', 'session_timeout', 'session_check', 'user', 'password']);
const statements = [];

function bodyOf(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** One statement at a time, as a server's queue would seem to a client that waits its turn. */
let turn = Promise.resolve();

const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://standin');
  if (url.pathname === '/ping') return res.end('Ok.\n');
  if (url.pathname === '/__standin/statements') return res.end(JSON.stringify(statements));
  if (url.pathname === '/__standin/forget') {
    statements.length = 0;
    return res.end('[]');
  }
  const body = await bodyOf(req);
  const inUrl = url.searchParams.get('query');
  let query = inUrl ?? body.toString('utf8');
  let values = inUrl !== null && body.length > 0 ? Readable.from([body]) : undefined;
  // An insert that reads its data through input() (as savedq's loads do): the embedded engine takes no
  // data for input(), so the data goes to a file of the stand-in's, which file() reads as the same rows.
  const input = /\binput\(\s*'((?:[^'\\]|\\.)*)'\s*\)/s.exec(query);
  const format = /\s*FORMAT\s+(\w+)\s*$/.exec(query);
  let dataFile;
  if (input && format && values) {
    dataFile = join(inserts, `${++insertCount}.data`);
    writeFileSync(dataFile, body);
    query = query.slice(0, format.index).replace(input[0], `file('${dataFile}', ${format[1]}, '${input[1]}')`);
    values = undefined;
  }
  const query_params = {};
  const clickhouse_settings = {};
  for (const [name, value] of url.searchParams) {
    // A parameter comes as the server reads one (\N is NULL, backslash escapes); the engine's binder takes values.
    if (name.startsWith('param_')) query_params[name.slice('param_'.length)] = value === '\\N' ? null : value.replace(/\\(.)/g, (_, c) => ({ t: '\t', n: '\n', r: '\r', 0: '\0' })[c] ?? c);
    else if (!NOT_SETTINGS.has(name)) clickhouse_settings[name] = value;
  }
  const received = (inUrl ?? body.toString('utf8')).slice(0, 4000);
  const run = async () => {
    statements.push(received);
    if (statements.length > 10_000) statements.shift();
    try {
      const result = await connection.exec({ query, query_params, clickhouse_settings, ...(values ? { values } : {}) });
      const chunks = [];
      for await (const chunk of result.stream) chunks.push(Buffer.from(chunk));
      const out = Buffer.concat(chunks);
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Summary': JSON.stringify(result.summary ?? {}), 'X-ClickHouse-Query-Id': result.query_id ?? '' });
      res.end(out);
    } catch (err) {
      const code = Number(err?.code ?? 1001) || 1001;
      const type = err?.type ?? 'STD_EXCEPTION';
      const message = String(err?.message ?? err).replace(/^Code: \d+\. DB::Exception: /, '');
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Exception-Code': String(code) });
      res.end(`Code: ${code}. DB::Exception: ${message} (${type}) (version 24.8.1.1 (official build))\n`);
    } finally {
      if (dataFile) rmSync(dataFile, { force: true });
    }
  };
  const done = turn.then(run, run);
  turn = done.catch(() => undefined);
  await done;
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
const stop = () => server.close(() => connection.close().finally(() => (rmSync(inserts, { recursive: true, force: true }), process.exit(0))));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
