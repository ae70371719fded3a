// npm run bench: savedq's speed and memory, each figure a ratio measured side by side in one run,
// alternating the two sides and quoting medians, on data this script generates itself.
//
//   BENCH_ROWS=1000000,10000000  rows per table at each scale (default: both)
//   BENCH_REPS=7                 repetitions per side
//   BENCH_LOAD_ROWS=1000000      lines in the NDJSON file the load figure uses
//   BENCH_HTTP_SECONDS=2         seconds per HTTP measurement
//   BENCH_HTTP_ROUNDS=21         HTTP measurements per side, each paired with the other side's next to it
//   BENCH_ONLY=scale,queries,load,tests,mcp,sandbox which parts to run: scale (cache miss, hit, rows read,
//                                and at the first size HTTP and what a running serve does for other
//                                processes), http (those HTTP figures alone, at the first size),
//                                queries (200 saved queries of a user's own), load,
//                                tests (savedq test), mcp (tool calls over stdio, a cold savedq mcp),
//                                sandbox (a caller's SQL over an answer, against the same call without),
//                                alerts (alerts check of 200 alerts on cached queries, against warm of the same),
//                                store (the PostgreSQL store against the SQLite file: a cache hit, serve's
//                                cached throughput; three replicas' uncached calls, counted at the warehouse),
//                                peer (one uncached request against @hypequery/serve, a dev dependency,
//                                on the same ClickHouse URL),
//                                warehouse (several hosts: a miss with the first of three refused against
//                                the same without it; a stale answer against a fresh hit; with
//                                BENCH_BEFORE=<another checkout's bin/savedq.js>, a miss against that build),
//                                operators (eight distinct misses through serve side by side, each held
//                                200 ms by the warehouse; a fresh run with the first of three hosts hung
//                                against the same without it),
//                                export (savedq export's rows a second, NDJSON and Parquet, against the
//                                engine's own writer into a file; its peak memory at 1 M and 4 M rows)
//
// The HTTP figures need a load generator that is not the bottleneck: wrk when it is on the PATH
// (`apt-get install wrk`), else autocannon (a dev dependency).
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, copyFileSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bindValues } from '../dist/queries/run.js';
import { normaliseParams } from '../dist/queries/params.js';
import { QueryCatalog } from '../dist/queries/catalog.js';
import { builtinQueriesDir } from '../dist/package.js';
import { openWarehouse } from '../dist/warehouse/index.js';
import { schemaStatements } from '../dist/warehouse/schema.js';
import { microsFromDate } from '../dist/time.js';
import { newGeneration } from '../dist/warehouse/generation.js';

const here = (f) => fileURLToPath(new URL(f, import.meta.url));
const BIN = here('../bin/savedq.js');
const SIZES = (process.env.BENCH_ROWS ?? '1000000,10000000').split(',').map(Number);
const REPS = Number(process.env.BENCH_REPS ?? 7);
const LOAD_ROWS = Number(process.env.BENCH_LOAD_ROWS ?? 1_000_000);
const HTTP_SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 2);
const HTTP_ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 21);
const ONLY = (process.env.BENCH_ONLY ?? 'scale,queries,load,tests,mcp,sandbox,alerts,store,peer,warehouse,operators,export').split(',');
// The instant the data ends at and CLI runs are made as of: this run's start, so that what serve answers
// as of the real now (HTTP has no as-of) covers the data too. A fixed date left the HTTP figures
// measuring empty answers once a week had passed.
const AT = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
const PROJECTS = 200;

const work = mkdtempSync(join(tmpdir(), 'savedq-bench-'));
const builtins = await new QueryCatalog({ builtin: builtinQueriesDir, user: [] }).scan();
const findEndpoint = (name) => builtins.byName.get(name);
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
/** The embedded engine on a data directory, as the library opens it. */
const openEngine = (dataDir, createTables = true) => openWarehouse({ urls: [], loadBalance: 'in-order', dataDir, lockWaitMs: 30_000, timeoutSeconds: 300, createTables });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x, d = 1) => x.toFixed(d);
const figures = [];
function figure(name, ours, theirs, unit, goal, ratio = ours / theirs, within = undefined) {
  figures.push({ name, ours, theirs, unit, ratio, goal, within });
  console.log(`  ${name}: savedq ${fmt(ours)} ${unit}, reference ${fmt(theirs)} ${unit}, ratio ${fmt(ratio, 2)} (goal ${goal})`);
}

/**
 * A figure of sides measured in rounds, each round's measurements next to each other: its ratio is the
 * median of the rounds' ratios, so that what the machine does meanwhile (a shared machine's load
 * comes and goes within seconds) weighs on both sides of each ratio alike; the medians of each side
 * are quoted beside it. A cost's ratio is the reference's against savedq's (`ratioOf`), so that it reads
 * as a rate's does: 1 as good as the reference, less worse.
 */
function pairedFigure(name, ours, theirs, unit, goal, ratioOf = (a, b) => a / b) {
  const ratios = ours.map((x, i) => ratioOf(x, theirs[i]));
  const within = medianInterval(ratios);
  figure(name, median(ours), median(theirs), unit, goal, median(ratios), within);
  console.log(`    the ${ratios.length} rounds' ratios: ${ratios.map((r) => fmt(r, 2)).join(' ')}${within ? `; their median within ${fmt(within[0], 2)}–${fmt(within[1], 2)} (95 %)` : ''}`);
}

/**
 * A 95 % interval for the median of measurements, assuming nothing of their distribution: from the
 * k-th smallest to the k-th largest, k the largest for which at most 2.5 % of binomial(n, ½) draws
 * fall below k (undefined for fewer than 6). Rounds of one run share the machine's slow and quick
 * stretches, so runs differ by more than it says; a goal is met for sure when the whole interval is.
 */
function medianInterval(xs) {
  const sorted = [...xs].sort((a, b) => a - b);
  const n = sorted.length;
  let k = 0;
  let below = 0;
  for (let p = 0.5 ** n; 2 * (below + p) <= 0.05; p = (p * (n - k)) / (k + 1), k += 1) below += p;
  return k === 0 ? undefined : [sorted[k - 1], sorted[n - k]];
}

/**
 * Measures sides in rounds, a measurement per side a round, each round in the order of the one before
 * reversed (so that no side is always first); with `warm`, after a round that is not counted.
 */
function inRounds(sides, rounds, warm) {
  const results = sides.map(() => []);
  for (let round = warm ? -1 : 0; round < rounds; round++) {
    const order = sides.map((side, i) => [side, i]);
    if (round % 2 !== 0) order.reverse();
    for (const [side, i] of order) {
      const measured = side();
      if (round >= 0) results[i].push(measured);
    }
  }
  return results;
}

/** Wall time of a command in ms, and its peak RSS in MB (GNU time), failing loudly on error. */
function timed(cmd, args, env = {}) {
  const started = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%M', cmd, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 1 << 28 });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr}`);
  const rssKb = Number(r.stderr.trim().split('\n').pop());
  return { ms, rssMb: rssKb / 1024, stdout: r.stdout };
}

/** Alternates two sides REPS times; returns the median of each. */
function sideBySide(a, b, reps = REPS) {
  return inRounds([a, b], reps, false).map(median);
}

async function generate(dataDir, rows) {
  const warehouse = await openEngine(dataDir);
  const started = Date.now();
  // Edge requests: 200 projects, 90 days before AT, realistic paths and statuses.
  await warehouse.command(`
    INSERT INTO edge_logs (id, timestamp, project, event_message, metadata)
    SELECT generateUUIDv4(),
           toDateTime64('${AT.slice(0, 19).replace('T', ' ')}', 6, 'UTC') - toIntervalMicrosecond(cityHash64(number, 1) % ${90 * 86400 * 1e6}),
           concat('project-', toString(number % ${PROJECTS})),
           concat('GET ', path),
           concat('{"request":{"method":"GET","url":"https://project-', toString(number % ${PROJECTS}), '.example', path,
                  '","path":"', path, '"},"response":{"status_code":', toString(status), '}}')
    FROM (SELECT number,
                 ['/rest/v1/todos', '/storage/v1/object/a.png', '/auth/v1/token', '/realtime/v1/websocket', '/graphql/v1'][1 + cityHash64(number, 2) % 5] AS path,
                 [200, 200, 200, 201, 404, 500][1 + cityHash64(number, 3) % 6] AS status
          FROM numbers(${rows}))`);
  await warehouse.command(`
    INSERT INTO function_edge_logs (id, timestamp, project, event_message, metadata)
    SELECT generateUUIDv4(),
           toDateTime64('${AT.slice(0, 19).replace('T', ' ')}', 6, 'UTC') - toIntervalMicrosecond(cityHash64(number, 4) % ${90 * 86400 * 1e6}),
           concat('project-', toString(number % ${PROJECTS})),
           'POST',
           concat('{"project_ref":"project-', toString(number % ${PROJECTS}), '","function_id":"fn-', toString(cityHash64(number, 5) % 3),
                  '","execution_time_ms":', toString(round(exp(4 + (cityHash64(number, 6) % 1000) / 500), 2)),
                  ',"response":{"status_code":', toString([200, 200, 200, 500][1 + cityHash64(number, 7) % 4]), '}}')
    FROM numbers(${rows})`);
  await warehouse.command('OPTIMIZE TABLE edge_logs FINAL');
  await warehouse.command('OPTIMIZE TABLE function_edge_logs FINAL');
  const [{ n }] = await warehouse.query('SELECT count() AS n FROM edge_logs', {});
  await warehouse.close();
  console.log(`  generated ${n} edge and ${rows} function rows in ${fmt((Date.now() - started) / 1000)} s`);
  return warehouse;
}

const CALLS = [
  ['logs.all', [['project', 'project-7'], ['project_tier', 'PAYG']]],
  ['functions.invocation-stats', [['project', 'project-7'], ['interval', '7day']]],
  ['usage.api-counts', [['project', 'project-7\\.'], ['interval', 'daily']]],
];

/** Rows the engine expects to read for a call (EXPLAIN ESTIMATE), summed over tables. */
async function estimatedRows(dataDir, endpoint, params) {
  const warehouse = await openEngine(dataDir);
  const e = findEndpoint(endpoint);
  const rows = await warehouse.query(`EXPLAIN ESTIMATE ${e.boundSql}`, bindValues(e, normaliseParams(e, params), microsFromDate(Date.parse(AT))));
  await warehouse.close();
  return rows.reduce((sum, r) => sum + Number(r.rows), 0);
}

async function scale(rows) {
  console.log(`\nscale: ${rows.toLocaleString('en-US')} rows a table`);
  const dataDir = join(work, `data-${rows}`);
  const env = { SAVEDQ_DATA_DIR: dataDir, SAVEDQ_CACHE_FILE: join(work, `cache-${rows}.sqlite`) };
  await generate(dataDir, rows);
  const results = {};
  for (const [endpoint, params] of CALLS) {
    const e = findEndpoint(endpoint);
    const sql = e.boundSql;
    const bound = JSON.stringify(bindValues(e, normaliseParams(e, params), microsFromDate(Date.parse(AT))));
    const args = ['run', endpoint, ...params.flatMap(([k, v]) => ['-p', `${k}=${v}`]), '--at', AT, '--no-cache', '-f', 'json'];
    const ours = timed('node', [BIN, ...args], env);
    const theirs = timed('node', [here('minimal-query.mjs'), dataDir, sql, bound]);
    if (JSON.stringify(JSON.parse(ours.stdout).map((r) => Object.values(r)[1])) !== JSON.stringify(JSON.parse(theirs.stdout).map((r) => Object.values(r)[1]))) {
      throw new Error(`${endpoint}: savedq and the minimal script disagree`);
    }
    const [a, b] = sideBySide(() => timed('node', [BIN, ...args], env).ms, () => timed('node', [here('minimal-query.mjs'), dataDir, sql, bound]).ms);
    figure(`cache miss, ${endpoint} @${rows / 1e6}M`, a, b, 'ms', '<= 1.15');
    const read = await estimatedRows(dataDir, endpoint, params);
    console.log(`    reads ~${read.toLocaleString('en-US')} rows of ${rows.toLocaleString('en-US')} (${fmt((100 * read) / rows, 2)} %)`);
    results[endpoint] = { ms: a, read };
  }
  if (rows === SIZES[0]) {
    // Cache hit: whole process against the floor of any Node CLI.
    const args = ['run', 'usage.api-counts', '-p', 'project=project-7\\.', '-p', 'interval=daily', '--at', AT, '-f', 'json'];
    timed('node', [BIN, ...args], env);
    const [hit, floor] = sideBySide(() => timed('node', [BIN, ...args], env).ms, () => timed('node', ['-e', '']).ms, REPS * 2);
    figure('cache hit (whole process)', hit, floor, 'ms', '<= 1.25');
    await httpFigure(env);
    const runRss = timed('node', [BIN, 'run', 'logs.all', '-p', 'project=project-7', '-p', 'project_tier=PAYG', '--at', AT], env).rssMb;
    console.log(`  memory: peak RSS of run ${fmt(runRss)} MB`);
  }
  return results;
}

/**
 * A load generator in a process of its own, so the bench's own event loop is never what limits the
 * server: wrk (Debian's, `apt-get install wrk`) when it is on the PATH, else autocannon (a dev
 * dependency). Requests per second over `seconds`, 32 keep-alive connections.
 */
function loadGenerator() {
  return spawnSync('wrk', ['--version']).error ? 'autocannon' : 'wrk';
}

/**
 * Sends a server `seconds` of requests from 32 keep-alive connections; its rate (req/s), and the CPU
 * time the server's process (all its threads) spent a request (µs).
 */
function hammer(server, path, headers, seconds) {
  const url = `${server.url}${path}`;
  const cpu0 = cpuMs(server.child.pid);
  let rate;
  let requests;
  if (loadGenerator() === 'wrk') {
    const args = ['-t1', '-c32', `-d${seconds}s`, ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), url];
    const out = spawnSync('wrk', args, { encoding: 'utf8' }).stdout;
    if (/Non-2xx/.test(out)) throw new Error(`non-2xx answers: ${out}`);
    rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
    requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  } else {
    const args = [here('../node_modules/autocannon/autocannon.js'), '-c', '32', '-d', String(seconds), '-j', ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]), url];
    const report = JSON.parse(spawnSync('node', args, { encoding: 'utf8' }).stdout);
    if (report.non2xx > 0) throw new Error(`${report.non2xx} non-2xx answers`);
    rate = report.requests.average;
    requests = report.requests.total;
  }
  return { rate, cpuUs: ((cpuMs(server.child.pid) - cpu0) * 1000) / requests };
}

/** The kernel's clock ticks a second, in which /proc counts CPU time (100 on Linux nearly always). */
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** The CPU time a process has spent so far, user and system, all its threads, in ms (counted by the kernel in CLOCK_TICKS). */
function cpuMs(pid) {
  // The fields after the command's name, which ends with the last ')': utime and stime are the 12th and 13th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/**
 * A server process, its standard error in a file (as a service manager would keep it): read through a
 * pipe, the bench would spend a core of its own reading the access log.
 */
async function startProcess(args, env) {
  const log = join(work, `server-${randomUUID()}.log`);
  const fd = openSync(log, 'w');
  const child = spawn('node', args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', fd] });
  closeSync(fd);
  let exited;
  child.on('exit', (code) => (exited = code));
  for (let waited = 0; waited < 30_000; waited += 20) {
    const m = /listening on (http:\S+)/.exec(readFileSync(log, 'utf8'));
    if (m) return { child, url: m[1] };
    if (exited !== undefined) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${args.join(' ')} did not start: ${readFileSync(log, 'utf8')}`);
}

/**
 * A script that prints `listening <port>` once it listens on 127.0.0.1 (the ClickHouse stand-in, the
 * peer): its process and URL, and `fault(line)`, which resolves once the stand-in has taken the line.
 */
async function listening(script, args) {
  const child = spawn('node', [script, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', () => reject(new Error(`${script} exited`)));
  });
  const fault = (line) =>
    new Promise((resolve) => {
      const acked = (d) => {
        if (String(d).includes(`ok ${line}\n`)) {
          child.stdout.off('data', acked);
          resolve();
        }
      };
      child.stdout.on('data', acked);
      child.stdin.write(`${line}\n`);
    });
  return { child, url: `http://127.0.0.1:${port}`, fault };
}

/** The body of a call's answer, which the figures measuring it must see rows in (not an empty answer's cost). */
async function answered(url, headers) {
  const body = await (await fetch(url, { headers })).text();
  if (!(JSON.parse(body).result?.length > 0)) throw new Error(`${url} answers no rows: ${body.slice(0, 300)}`);
  return body;
}

function peakRssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)[1]) / 1024;
}

async function httpFigure(env) {
  const path = '/api/endpoints/query/usage.api-counts?project=project-7%5C.&interval=daily';
  // As a user runs it: one access-log line a request.
  const secrets = { SAVEDQ_TOKEN_SECRETS: 'a-bench-token-secret-0123456789abcdefgh' };
  const server = await startProcess([BIN, 'serve', '--port', '0'], { ...env, ...secrets, SAVEDQ_API_KEYS: 'bench-key' });
  const headers = { 'X-API-KEY': 'bench-key' };
  // The same call as the key's (an unanchored pattern, on purpose), so both read one cache entry.
  const minted = spawnSync('node', [BIN, 'token', 'create', '--name', 'bench', '--query', 'usage.*', '--fix', 'project=project-7\\.', '--fix-unanchored', '--ttl', '1h'], { env: { ...process.env, ...env, ...secrets }, encoding: 'utf8' });
  if (minted.status !== 0) throw new Error(`token create failed: ${minted.stderr}`);
  const token = minted.stdout.trim();
  const bearer = { Authorization: `Bearer ${token}` };
  const body = await answered(`${server.url}${path}`, headers); // warms the cache
  const bare = await startProcess([here('bare-server.mjs'), body], {});
  // What any server answering under the contract sends and logs (its headers, a log line), on bare
  // node:http: how much of the gap to the bare server is the contract's own, and how much savedq's.
  const floor = await startProcess([here('contract-server.mjs'), body], {});
  // The bare server gets the very requests savedq gets, the credential's header too (which it reads
  // past, as Node parses every header), each next to savedq's side in every round.
  const [ours, theirs, floors, tokens, theirsForTokens] = inRounds(
    [
      () => hammer(server, path, headers, HTTP_SECONDS),
      () => hammer(bare, path, headers, HTTP_SECONDS),
      () => hammer(floor, path, headers, HTTP_SECONDS),
      () => hammer(server, path, bearer, HTTP_SECONDS),
      () => hammer(bare, path, bearer, HTTP_SECONDS),
    ],
    HTTP_ROUNDS,
    true,
  );
  console.log(`  memory: peak RSS of serve under load ${fmt(peakRssMb(server.child.pid))} MB`);
  bare.child.kill('SIGTERM');
  floor.child.kill('SIGTERM');
  const rates = (sides) => sides.map((side) => side.rate);
  pairedFigure(`HTTP cached endpoint, 32 keep-alive connections (${loadGenerator()}), access log on`, rates(ours), rates(theirs), 'req/s', '>= 0.75');
  pairedFigure(`the same with a signed token (Authorization: Bearer)`, rates(tokens), rates(theirsForTokens), 'req/s', '>= 0.75');
  pairedFigure(`the contract's headers and log line alone (bench/contract-server.mjs), against the bare server`, rates(floors), rates(theirs), 'req/s', '(for comparison)');
  pairedFigure(`HTTP cached endpoint against the contract's headers and log line alone`, rates(ours), rates(floors), 'req/s', '(for comparison)');
  // What a request costs each server in CPU: whether a lower rate is the server's own work, or its
  // waiting (for the load generator, or for a core another tenant of the machine holds).
  const costs = (sides) => sides.map((side) => side.cpuUs);
  const cheaper = (ours, theirs) => theirs / ours;
  pairedFigure('CPU a cached answer costs the server (all its threads), with a key, against the bare server\'s', costs(ours), costs(theirs), 'µs', '(for comparison)', cheaper);
  pairedFigure('the same with a signed token', costs(tokens), costs(theirsForTokens), 'µs', '(for comparison)', cheaper);
  pairedFigure('the same with a key, against the contract\'s headers and log line alone', costs(ours), costs(floors), 'µs', '(for comparison)', cheaper);
  await badTokenFigure(server, headers, path);
  await sharedFigures(env, server, headers);
  server.child.kill('SIGTERM');
  await new Promise((resolve) => server.child.once('exit', resolve));
  await floodFigures(env);
  // The same miss with no serve: the CLI opens the engine itself.
  const alone = ['run', 'logs.all', '-p', 'project=project-7', '-p', 'project_tier=PAYG', '--at', AT, '--no-cache', '-f', 'json'];
  const [a, b] = sideBySide(() => timed('node', [BIN, ...alone], env).ms, () => timed('node', ['-e', '']).ms);
  figure('CLI run --no-cache, no serve running, whole process', a, b, 'ms', '(for comparison)');
}

/** The p99 of a good caller's cached requests, alone and while 300 connections send bad tokens. */
async function badTokenFigure(server, headers, path) {
  const good = async () => {
    const ms = [];
    for (let i = 0; i < 300; i++) ms.push(await timedGet(`${server.url}${path}`, headers));
    return [...ms].sort((a, b) => a - b)[Math.floor(ms.length * 0.99) - 1];
  };
  const idle = await good();
  const forged = `${Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ name: 'x', exp: 9e9, scopes: [{ query: '*' }] })).toString('base64url')}.${'A'.repeat(43)}`;
  const flood = spawn(loadGenerator() === 'wrk' ? 'wrk' : 'node', loadGenerator() === 'wrk' ? ['-t2', '-c300', '-d8s', '-H', `Authorization: Bearer ${forged}`, `${server.url}${path}`] : [here('../node_modules/autocannon/autocannon.js'), '-c', '300', '-d', '8', '-H', `Authorization=Bearer ${forged}`, `${server.url}${path}`], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 1000));
  const during = await good();
  flood.kill('SIGTERM');
  figure('p99 of a good caller\'s cached requests while 300 connections send bad tokens, against alone', during, idle, 'ms', '(p99 <= 100 ms)');
}

/**
 * One caller floods serve with distinct uncached calls (1,200, 100 at a time); meanwhile another
 * caller's uncached call, against the same call on an idle server, and its cached calls' p99.
 */
async function floodFigures(env) {
  const server = await startProcess([BIN, 'serve', '--port', '0', '--quiet'], { ...env, SAVEDQ_API_KEYS: 'flooder,other' });
  const flooder = { 'X-API-KEY': 'flooder' };
  const other = { 'X-API-KEY': 'other' };
  const uncached = (p) => `${server.url}/api/endpoints/query/logs.all?project=${p}&project_tier=PAYG`;
  const cached = `${server.url}/api/endpoints/query/usage.api-counts?project=project-9%5C.&interval=daily`;
  await timedGet(cached, other).catch(() => undefined);
  const idle = [];
  for (let i = 0; i < 5; i++) idle.push(await timedGet(uncached(`project-1${i}`), other));
  let flooding = true;
  const answers = { ok: 0, overloaded: 0 };
  const flood = (async () => {
    for (let wave = 0; wave < 12; wave++) {
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          new Promise((resolve) => {
            http
              .get(uncached(`flood-${wave}-${i}`), { headers: flooder, agent: false }, (res) => {
                res.resume();
                res.on('end', () => resolve((res.statusCode === 200 ? answers.ok++ : answers.overloaded++)));
              })
              .on('error', resolve);
          }),
        ),
      );
    }
  })();
  void flood.then(() => (flooding = false));
  await new Promise((r) => setTimeout(r, 200));
  const during = [];
  const cachedMs = [];
  // For as long as the flood lasts: the other caller's uncached calls, and its cached ones between.
  for (let i = 0; flooding; i++) {
    during.push(await timedGet(uncached(`project-2${i}`), other));
    for (let j = 0; j < 20 && flooding; j++) cachedMs.push(await timedGet(cached, other));
  }
  await flood;
  server.child.kill('SIGTERM');
  await new Promise((resolve) => server.child.once('exit', resolve));
  const p99 = [...cachedMs].sort((a, b) => a - b)[Math.floor(cachedMs.length * 0.99) - 1];
  figure(`another caller's uncached call during a flood of one caller's (${answers.ok} answered, ${answers.overloaded} overloaded), against idle`, median(during), median(idle), 'ms', '<= 5');
  console.log(`  its cached calls during the flood: p99 ${fmt(p99)} ms (goal <= 100 ms)`);
}

/** One GET's time in ms, through a client of its own (a fresh connection, as a dashboard's poll makes). */
function timedGet(url, headers) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    http
      .get(url, { headers, agent: false }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(Number(process.hrtime.bigint() - started) / 1e6) : reject(new Error(`status ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}

/**
 * What a running serve does for the other processes on its data directory: a CLI miss sent to it; an
 * uncached request after the server sat idle; and run, warm and load while a dashboard polls.
 */
async function sharedFigures(env, server, headers) {
  const miss = ['run', 'logs.all', '-p', 'project=project-7', '-p', 'project_tier=PAYG', '--at', AT, '--no-cache', '-f', 'json'];
  timed('node', [BIN, ...miss], env);
  const [a, b] = sideBySide(() => timed('node', [BIN, ...miss], env).ms, () => timed('node', ['-e', '']).ms, REPS * 2);
  figure('CLI run --no-cache while serve runs, whole process', a, b, 'ms', '<= 1.5');

  const uncached = `${server.url}/api/endpoints/query/logs.all?project=project-7&project_tier=PAYG`;
  const busy = [];
  for (let i = 0; i < 20; i++) busy.push(await timedGet(uncached, headers));
  const idle = [];
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 10_000));
    idle.push(await timedGet(uncached, headers));
  }
  figure('uncached HTTP request after 10 s idle, against one on a busy server', median(idle), median(busy), 'ms', '<= 2');

  // A dashboard polling the uncached logs.all every 300 ms, and meanwhile run, warm and load. A second's
  // lock wait: a command that waited for the data directory instead of using serve would fail.
  const file = join(work, 'shared.ndjson');
  const out = createWriteStream(file);
  for (let i = 0; i < 1_000_000; i++) {
    const line = `{"timestamp":"${new Date(Date.parse(AT) - i * 1000).toISOString()}","project":"shared-${i % 10}","event_message":"e${i}"}\n`;
    if (!out.write(line)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
  const polls = { ms: [], failed: 0 };
  let polling = true;
  const poller = (async () => {
    while (polling) {
      await timedGet(uncached, headers).then((ms) => polls.ms.push(ms), () => polls.failed++);
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  const quick = { ...env, SAVEDQ_LOCK_WAIT: '1' };
  const started = Date.now();
  const results = await Promise.all(
    [
      ['run', 'logs.all', '-p', 'project=project-3', '--no-cache'],
      ['run', 'usage.api-counts', '-p', 'project=project-3\\.', '-p', 'interval=daily', '--refresh'],
      ['warm'],
      ['load', 'edge_logs', file, '--batch-mb', '4'],
    ].map(
      (args) =>
        new Promise((resolve) => {
          const child = spawn('node', [BIN, '--quiet', ...args], { env: { ...process.env, ...quick }, stdio: ['ignore', 'ignore', 'pipe'] });
          let err = '';
          child.stderr.on('data', (d) => (err += d));
          child.on('exit', (code) => resolve({ command: args[0], code, err: err.trim() }));
        }),
    ),
  );
  polling = false;
  await poller;
  const failed = results.filter((r) => r.code !== 0);
  console.log(
    `  run, warm and load (1 M lines) while a client polls logs.all every 300 ms through serve: ${results.length - failed.length} of ${results.length} succeeded in ${fmt((Date.now() - started) / 1000)} s; the client's ${polls.ms.length + polls.failed} polls, ${polls.failed} failed, ${fmt(median(polls.ms))} ms median, ${fmt(Math.max(...polls.ms))} ms at most${failed.length > 0 ? `; ${failed.map((f) => `${f.command}: ${f.err}`).join('; ')}` : ''}`,
  );
}

/**
 * 200 saved queries of a user's own in the queries folder: a cache hit must not pay for them (a call by
 * name reads its own file), and list and check of them all take what they take.
 */
async function queriesFigure() {
  const COUNT = 200;
  console.log(`\nqueries: a folder of ${COUNT} saved queries`);
  const folder = join(work, 'queries');
  mkdirSync(folder);
  const examples = here('../sql/examples/');
  const sources = readdirSync(examples).filter((f) => f.endsWith('.sql')).map((f) => readFileSync(join(examples, f), 'utf8'));
  for (let i = 0; i < COUNT; i++) {
    // Each a query of its own (its own SQL, so its own digest and id), as a team's folder would hold.
    writeFileSync(join(folder, `team.query-${String(i).padStart(3, '0')}.sql`), `${sources[i % sources.length].trimEnd()}\n-- variant ${i}\n`);
  }
  copyFileSync(join(examples, 'errors.by-path.sql'), join(folder, 'errors.by-path.sql'));
  // A folder as a team's is: settled. Files changed in the last 2 s are not trusted to the catalog's
  // index (src/queries/catalog.ts, SETTLED_MS: each run then reads every definition), so measured at
  // once, the first rounds measured a folder just written.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  const base = { SAVEDQ_DATA_DIR: join(work, 'queries-data'), SAVEDQ_CACHE_FILE: join(work, 'queries-cache.sqlite') };
  const withFolder = { ...base, SAVEDQ_QUERIES: folder };
  const none = { ...base, SAVEDQ_QUERIES: join(work, 'no-queries') };
  const builtin = ['run', 'usage.api-counts', '-p', 'project=project-7\\.', '-p', 'interval=daily', '--at', AT, '-f', 'json'];
  const own = ['run', 'errors.by-path', '-p', 'project=project-7', '--at', AT, '-f', 'json'];
  for (const [args, env] of [[builtin, none], [builtin, withFolder], [own, withFolder]]) timed('node', [BIN, ...args], env); // fills the cache
  const [hit200, hit0] = sideBySide(() => timed('node', [BIN, ...builtin], withFolder).ms, () => timed('node', [BIN, ...builtin], none).ms, REPS * 2);
  figure(`cache hit of a built-in, ${COUNT} queries in the folder vs none`, hit200, hit0, 'ms', '~ 1');
  const [own200, floor] = sideBySide(() => timed('node', [BIN, ...own], withFolder).ms, () => timed('node', ['-e', '']).ms, REPS * 2);
  figure(`cache hit of a user query among ${COUNT}, whole process`, own200, floor, 'ms', '<= 1.25');
  const [builtin200, floor2] = sideBySide(() => timed('node', [BIN, ...builtin], withFolder).ms, () => timed('node', ['-e', '']).ms, REPS * 2);
  figure(`cache hit of a built-in with ${COUNT} in the folder, whole process`, builtin200, floor2, 'ms', '<= 1.25');
  const list = median(Array.from({ length: REPS }, () => timed('node', [BIN, 'list', '-f', 'json'], withFolder).ms));
  const list0 = median(Array.from({ length: REPS }, () => timed('node', [BIN, 'list', '-f', 'json'], none).ms));
  console.log(`  list of ${COUNT + 4} queries: ${fmt(list)} ms (of the 3 built-ins alone: ${fmt(list0)} ms)`);
  const check = median(Array.from({ length: 3 }, () => timed('node', [BIN, 'check'], withFolder).ms));
  console.log(`  check of ${COUNT + 4} queries, each parsed and planned by the engine and its answer described: ${fmt(check)} ms`);

  // Answers that keep their promises (docs/queries.md): a lock and a versioned query in the folder cost
  // a cache hit nothing (the shape is checked once, by check and lock, not by a call).
  const locked = join(work, 'queries-locked');
  mkdirSync(locked);
  for (const f of readdirSync(folder)) copyFileSync(join(folder, f), join(locked, f));
  // Version 1 kept callable as errors.by-path@1.sql, the current file version 2 (what savedq version makes).
  copyFileSync(join(folder, 'errors.by-path.sql'), join(locked, 'errors.by-path@1.sql'));
  writeFileSync(join(locked, 'errors.by-path.sql'), readFileSync(join(folder, 'errors.by-path.sql'), 'utf8').replace('/*\n', '/*\nversion: 2\n'));
  const lockedEnv = { ...base, SAVEDQ_QUERIES: locked };
  const lock = median(Array.from({ length: 3 }, () => timed('node', [BIN, 'lock'], lockedEnv).ms));
  console.log(`  lock of ${COUNT + 4} queries, each answer described by the engine: ${fmt(lock)} ms`);
  await new Promise((resolve) => setTimeout(resolve, 2_500)); // settled, as above
  timed('node', [BIN, ...own], lockedEnv);
  const [withLock, without] = sideBySide(() => timed('node', [BIN, ...own], lockedEnv).ms, () => timed('node', [BIN, ...own], withFolder).ms, REPS * 2);
  figure(`cache hit of a user query among ${COUNT}, with a lock and a versioned query in the folder, against the same without`, withLock, without, 'ms', '<= 1.02');
  const pinned = own.map((arg) => (arg === 'errors.by-path' ? 'errors.by-path@1' : arg));
  timed('node', [BIN, ...pinned], lockedEnv);
  const [withPin, unpinned] = sideBySide(() => timed('node', [BIN, ...pinned], lockedEnv).ms, () => timed('node', [BIN, ...own], withFolder).ms, REPS * 2);
  figure(`cache hit of a kept version (name@1) among ${COUNT}, against the same query unversioned`, withPin, unpinned, 'ms', '<= 1.02');
}

async function loadFigure() {
  console.log(`\nload: ${LOAD_ROWS.toLocaleString('en-US')} NDJSON lines`);
  const file = join(work, 'events.ndjson');
  const out = createWriteStream(file);
  for (let i = 0; i < LOAD_ROWS; i++) {
    const p = `project-${i % PROJECTS}`;
    const ts = new Date(Date.parse(AT) - (i % 7_776_000) * 1000).toISOString();
    const line = `{"id":"${crypto.randomUUID()}","timestamp":"${ts}","project":"${p}","event_message":"GET /rest/v1/t","metadata":{"request":{"method":"GET","url":"https://${p}.example/rest/v1/t","path":"/rest/v1/t"},"response":{"status_code":200}}}\n`;
    if (!out.write(line)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
  // What the scale part and this file wrote is still being flushed to disk; let that finish first, or
  // it slows whichever side writes more.
  spawnSync('sync');
  const mb = statSync(file).size / 1e6;
  let n = 0;
  const fresh = () => join(work, `load-${n++}`);
  const ours = [];
  const theirs = [];
  let rss = 0;
  // Each side loads into a data directory of its own whose tables exist and are empty, as savedq
  // makes them: the figure is about loading, not about making tables (which the engine's INSERT
  // cannot do, and savedq does once per data directory).
  const withTables = async () => {
    const dir = fresh();
    const tables = await openEngine(dir, false);
    for (const statement of schemaStatements()) await tables.command(statement);
    await tables.close();
    return dir;
  };
  for (let i = 0; i < Math.min(REPS, 5); i++) {
    const dir = await withTables();
    const r = timed('node', [BIN, '--quiet', 'load', 'edge_logs', file], { SAVEDQ_DATA_DIR: dir });
    ours.push(LOAD_ROWS / (r.ms / 1000));
    rss = Math.max(rss, r.rssMb);
    rmSync(dir, { recursive: true, force: true });
    const dir2 = await withTables();
    theirs.push(LOAD_ROWS / (timed('node', [here('minimal-load.mjs'), dir2, 'edge_logs', file]).ms / 1000));
    rmSync(dir2, { recursive: true, force: true });
  }
  figure(`load rows/s (${fmt(mb, 0)} MB file)`, median(ours), median(theirs), 'rows/s', '>= 0.8');
  console.log(`  memory: peak RSS of load of a ${fmt(mb, 0)} MB file: ${fmt(rss)} MB (goal < 1024 MB whatever the size)`);
}

/**
 * savedq test: the shipped tests, and a folder of 20 queries with 5 cases each over shared fixtures of
 * 10,000 events, each beside one cold `run --no-cache` (the engine's start, on an empty data directory).
 * The goal: the engine's start plus at most 30 ms a case.
 */
async function testsFigure() {
  const FILES = 20;
  const CASES = 5;
  const EVENTS = 10_000;
  console.log(`\ntests: savedq test --builtin, and ${FILES} queries x ${CASES} cases over ${EVENTS.toLocaleString('en-US')} shared events`);
  const folder = join(work, 'tested');
  mkdirSync(join(folder, 'fixtures'), { recursive: true });
  const lines = [];
  for (let i = 0; i < EVENTS; i++) {
    const p = `project-${i % 10}`;
    const ts = new Date(Date.parse(AT) - (i % 86_400) * 60_000).toISOString();
    lines.push(`{"timestamp":"${ts}","project":"${p}","metadata":{"request":{"method":"GET","url":"https://${p}.example/rest/v1/t${i % 7}","path":"/rest/v1/t${i % 7}"},"response":{"status_code":${[200, 201, 301, 404, 500][i % 5]}}}}`);
  }
  writeFileSync(join(folder, 'fixtures', 'edge.ndjson'), `${lines.join('\n')}\n`);
  const examples = here('../sql/examples/');
  const kinds = [
    ['errors.by-path.sql', (n) => `{ project: project-${n} }`],
    ['traffic.daily.sql', (n) => `{ url: 'project-${n}\\.', since: 2026-11-01 }`],
    ['status.classes-hourly.sql', (n) => `{ projects: project-${n} }`],
  ];
  for (let i = 0; i < FILES; i++) {
    const [source, params] = kinds[i % kinds.length];
    const name = `bench.q-${String(i).padStart(2, '0')}`;
    writeFileSync(join(folder, `${name}.sql`), `${readFileSync(join(examples, source), 'utf8').trimEnd()}\n-- variant ${i}\n`);
    const cases = Array.from({ length: CASES }, (_, c) => `  - name: case ${c}\n    params: ${params(c)}\n    row_count: 0\n`).join('');
    writeFileSync(join(folder, `${name}.test.yaml`), `at: ${AT}\nfixtures:\n  edge_logs: fixtures/edge.ndjson\ncases:\n${cases}`);
  }
  const env = { SAVEDQ_QUERIES: folder, SAVEDQ_DATA_DIR: join(work, 'tests-unused'), SAVEDQ_CACHE_FILE: join(work, 'tests-cache.sqlite') };
  // The counts the queries return, written in by --update (which exits 0 once they are).
  timed('node', [BIN, '--quiet', 'test', '--update'], env);
  let n = 0;
  const cold = () => timed('node', [BIN, 'run', 'usage.api-counts', '-p', 'project=x', '-p', 'interval=daily', '--no-cache'], { SAVEDQ_DATA_DIR: join(work, `tests-cold-${n++}`) }).ms;
  const [folderMs, coldMs] = sideBySide(() => timed('node', [BIN, '--quiet', 'test'], env).ms, cold, Math.min(REPS, 5));
  const perCase = (folderMs - coldMs) / (FILES * CASES);
  console.log(`  ${FILES} files x ${CASES} cases: ${fmt(folderMs, 0)} ms; one cold run --no-cache: ${fmt(coldMs, 0)} ms; (difference) per case: ${fmt(perCase)} ms (goal <= 30 ms)`);
  figures.push({ name: `savedq test, per case beyond one engine start (${FILES} x ${CASES} over ${EVENTS} events)`, ratio: perCase / 30, goal: '<= 1 (30 ms)' });
  const builtinEnv = { ...env, SAVEDQ_QUERIES: '' };
  const report = JSON.parse(timed('node', [BIN, '--quiet', 'test', '--builtin', '-f', 'json'], builtinEnv).stdout);
  const cases = report.passed;
  const [builtinMs, coldMs2] = sideBySide(() => timed('node', [BIN, '--quiet', 'test', '--builtin'], builtinEnv).ms, cold, Math.min(REPS, 5));
  const perBuiltin = (builtinMs - coldMs2) / cases;
  console.log(`  test --builtin (${report.files.length} files, ${cases} cases): ${fmt(builtinMs, 0)} ms; one cold run --no-cache: ${fmt(coldMs2, 0)} ms; per case: ${fmt(perBuiltin)} ms`);
  figures.push({ name: `savedq test --builtin, per case beyond one engine start (${cases} cases)`, ratio: perBuiltin / 30, goal: '<= 1 (30 ms)' });
}

/**
 * A caller's SQL over a query's answer (docs/sandboxing.md), on the first size's data: an uncached call whose
 * SQL names every field of result against the same call without SQL (whole CLI processes: the check's
 * two statements included), and a cached answer to SQL against a plain cached answer over HTTP.
 */
async function sandboxFigures() {
  const rows = SIZES[0];
  console.log(`\nsandbox: ${rows.toLocaleString('en-US')} rows a table`);
  const dataDir = join(work, `data-${rows}`);
  if (!existsSync(dataDir)) await generate(dataDir, rows);
  // usage.api-counts as its author would open it to callers' SQL.
  const queries = join(work, 'sandboxed');
  mkdirSync(queries, { recursive: true });
  const usage = readFileSync(findEndpoint('usage.api-counts').file, 'utf8').replace(/^id: .*\n/m, '').replace(/\*\/\n/, 'sandbox: true\n*/\n');
  writeFileSync(join(queries, 'usage.sandboxed.sql'), usage);
  const env = { SAVEDQ_DATA_DIR: dataDir, SAVEDQ_CACHE_FILE: join(work, 'cache-sandbox.sqlite'), SAVEDQ_QUERIES: queries };
  const fields = 'timestamp, total_rest_requests, total_storage_requests, total_auth_requests, total_realtime_requests';
  const call = ['run', 'usage.sandboxed', '-p', 'project=project-7\\.', '-p', 'interval=hourly', '--at', AT, '--no-cache', '-f', 'json'];
  const plain = timed('node', [BIN, ...call], env).stdout;
  const withSql = timed('node', [BIN, ...call, '--sql', `SELECT ${fields} FROM result`], env).stdout;
  if (plain !== withSql) throw new Error('usage.sandboxed: the SQL over result does not answer what the query does');
  const [a, b] = sideBySide(() => timed('node', [BIN, ...call, '--sql', `SELECT ${fields} FROM result`], env).ms, () => timed('node', [BIN, ...call], env).ms);
  figure('uncached call with SELECT <every field> FROM result, against the same call without SQL', a, b, 'ms', '<= 1.1');

  const server = await startProcess([BIN, 'serve', '--port', '0'], { ...env, SAVEDQ_API_KEYS: 'bench-key' });
  const headers = { 'X-API-KEY': 'bench-key' };
  const base = '/api/endpoints/query/usage.sandboxed?project=project-7%5C.&interval=daily';
  const asked = `${base}&sql=${encodeURIComponent('SELECT toStartOfWeek(timestamp) AS week, sum(total_rest_requests) AS rest FROM result GROUP BY week ORDER BY week')}`;
  for (const path of [base, asked]) await answered(`${server.url}${path}`, headers); // both cached
  const [ours, theirs] = inRounds([() => hammer(server, asked, headers, HTTP_SECONDS).rate, () => hammer(server, base, headers, HTTP_SECONDS).rate], HTTP_ROUNDS, true);
  server.child.kill('SIGTERM');
  await new Promise((resolve) => server.child.once('exit', resolve));
  pairedFigure(`HTTP cached answer to SQL, against a plain cached answer (${loadGenerator()})`, ours, theirs, 'req/s', '>= 0.9');
}

/**
 * `savedq alerts check` of 200 alerts whose calls are cached (each a project's functions.invocation-stats
 * with a condition over it), against `savedq warm` refreshing the same 200 calls: what evaluating,
 * deciding and keeping state costs besides the queries. Before each pair, a new generation of the
 * data (as a load makes) makes warm's calls due; an untimed check then caches the alerts' calls again.
 */
async function alertsFigure() {
  const COUNT = 200;
  const rows = SIZES[0];
  console.log(`\nalerts: ${COUNT} alerts, ${rows.toLocaleString('en-US')} rows a table`);
  const dataDir = join(work, `data-${rows}`);
  if (!existsSync(dataDir)) await generate(dataDir, rows);
  const queries = join(work, 'alerts');
  mkdirSync(queries, { recursive: true });
  for (let i = 0; i < COUNT; i++) {
    const alert = `query: functions.invocation-stats\nparams: { project: project-${i}, interval: 1day }\nwhen: error_count > count\nevery: 1m\nnotify:\n  - command: ["true"]\n`;
    writeFileSync(join(queries, `team.alert-${String(i).padStart(3, '0')}.alert.yaml`), alert);
  }
  const cacheFile = join(work, 'cache-alerts.sqlite');
  const env = { SAVEDQ_DATA_DIR: dataDir, SAVEDQ_CACHE_FILE: cacheFile, SAVEDQ_QUERIES: queries };
  // The same calls, plain, served once: warm's warm set.
  const { Savedq } = await import('../dist/library.js');
  const { resolveConfig } = await import('../dist/config.js');
  const lib = new Savedq(resolveConfig({ dataDir, cacheFile, queries: [queries] }, { XDG_CONFIG_HOME: join(work, 'no-config') }));
  for (let i = 0; i < COUNT; i++) await lib.run({ nameOrId: 'functions.invocation-stats', params: [['project', `project-${i}`], ['interval', '1day']], at: AT });
  await lib.close();
  const check = ['alerts', 'check', '--force', '--at', AT, '--quiet'];
  const alertsCheck = () => {
    const r = spawnSync('node', [BIN, ...check], { env: { ...process.env, ...env }, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`alerts check failed (${r.status}): ${r.stderr}`);
  };
  alertsCheck();
  const checks = [];
  const warms = [];
  const fills = [];
  for (let i = 0; i < Math.min(REPS, 5); i++) {
    newGeneration(dataDir);
    warms.push(timed('node', [BIN, 'warm', '--quiet'], env).ms);
    const started = Date.now();
    alertsCheck();
    fills.push(Date.now() - started);
    checks.push(timed('node', [BIN, ...check], env).ms);
  }
  console.log(`  alerts check of ${COUNT} alerts whose calls are not cached: ${fmt(median(fills))} ms`);
  figure(`alerts check of ${COUNT} alerts on cached queries, against warm of the same ${COUNT} calls`, median(checks), median(warms), 'ms', '<= 2');
}

/**
 * MCP: a cached tool call over standard input and output (client and `savedq mcp` started) against a
 * cached HTTP request to serve for the same call (goal <= 1.5); and initialize + tools/list from a
 * cold `savedq mcp` against a cache hit's whole process (goal <= 2).
 */
async function mcpFigures() {
  console.log('\nmcp: tools for agents, over standard input and output');
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const env = { SAVEDQ_DATA_DIR: join(work, 'mcp-data'), SAVEDQ_CACHE_FILE: join(work, 'mcp-cache.sqlite'), SAVEDQ_QUERIES: '', XDG_CONFIG_HOME: join(work, 'no-config') };
  spawnSync('node', [BIN, 'load', '--sample'], { env: { ...process.env, ...env }, stdio: 'ignore' });
  const args = { project: 'acme-shop', interval: 'daily' };
  const server = await startProcess([BIN, 'serve', '--port', '0', '--quiet'], { ...env, SAVEDQ_API_KEYS: 'bench-key' });
  const url = `${server.url}/api/endpoints/query/usage.api-counts?project=acme-shop&interval=daily`;
  const headers = { 'X-API-KEY': 'bench-key' };
  const client = new Client({ name: 'savedq-bench', version: '1' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: { ...process.env, ...env }, stderr: 'ignore' }));
  const toolCall = async () => {
    const started = process.hrtime.bigint();
    const r = await client.callTool({ name: 'usage_api-counts', arguments: args });
    if (r.isError) throw new Error(r.content[0].text);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  const httpCall = async () => {
    const started = process.hrtime.bigint();
    const res = await fetch(url, { headers });
    await res.text();
    if (res.status !== 200) throw new Error(`status ${res.status}`);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  await toolCall(); // the cache is warm for both from here
  await httpCall();
  const tool = [];
  const viaHttp = [];
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 50; i++) tool.push(await toolCall());
    for (let i = 0; i < 50; i++) viaHttp.push(await httpCall());
  }
  figure('MCP cached tool call over stdio, against a cached HTTP request to serve (one at a time, medians)', median(tool), median(viaHttp), 'ms', '<= 1.5');
  await client.close();
  server.child.kill('SIGTERM');
  await new Promise((resolve) => server.child.once('exit', resolve));

  // Cold: a new `savedq mcp` answering initialize and tools/list, its whole process; a cache hit's whole process.
  const session = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  ].map((m) => `${JSON.stringify(m)}\n`).join('');
  const coldMcp = () => {
    const started = process.hrtime.bigint();
    const r = spawnSync('node', [BIN, 'mcp'], { env: { ...process.env, ...env }, input: session, encoding: 'utf8' });
    if (r.status !== 0 || !r.stdout.includes('"tools"')) throw new Error(`savedq mcp failed: ${r.stderr}`);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  const hit = () => timed('node', [BIN, 'run', 'usage.api-counts', '-p', 'project=acme-shop', '-p', 'interval=daily', '-f', 'json'], env).ms;
  hit();
  const [cold, cached] = sideBySide(coldMcp, hit, Math.max(REPS, 11));
  figure('MCP initialize + tools/list from a cold savedq mcp, against a cache hit of run (whole processes)', cold, cached, 'ms', '<= 2');
}

/**
 * The shared store (docs/scaling.md), on a PostgreSQL this script starts (test/postgres.mjs, Debian's
 * server in a temporary folder): a cache hit from it, whole process, against one from the SQLite file
 * (goal <= 1.2); serve's cached HTTP throughput on it against on the SQLite file, each serve on a data
 * directory of its own (goal >= 0.95); and three replicas on one warehouse URL (the tests' ClickHouse
 * stand-in over the embedded engine) given the same 50 uncached calls at once: the queries the
 * warehouse was asked (goal 50, not 150).
 */
async function storeFigures() {
  const { startPostgres } = await import('../test/postgres.mjs');
  const rows = 100_000;
  console.log(`\nstore: PostgreSQL against the SQLite file, ${rows.toLocaleString('en-US')} rows a table`);
  const pg = await startPostgres();
  const servers = [];
  let standin;
  try {
    const [pgData, sqliteData] = [join(work, 'store-pg-data'), join(work, 'store-sqlite-data')];
    await generate(pgData, rows);
    await generate(sqliteData, rows);
    const pgEnv = { SAVEDQ_DATA_DIR: pgData, SAVEDQ_STORE_URL: pg.url, SAVEDQ_API_KEYS: 'bench-key' };
    const sqliteEnv = { SAVEDQ_DATA_DIR: sqliteData, SAVEDQ_CACHE_FILE: join(work, 'store-cache.sqlite'), SAVEDQ_API_KEYS: 'bench-key' };
    const args = ['run', 'usage.api-counts', '-p', 'project=project-7\\.', '-p', 'interval=daily', '--at', AT, '-f', 'json'];
    timed('node', [BIN, ...args], pgEnv);
    timed('node', [BIN, ...args], sqliteEnv);
    const [pgHit, sqliteHit] = sideBySide(() => timed('node', [BIN, ...args], pgEnv).ms, () => timed('node', [BIN, ...args], sqliteEnv).ms, REPS * 2);
    figure('cache hit from the PostgreSQL store (whole process), against one from the SQLite file', pgHit, sqliteHit, 'ms', '<= 1.2');

    const path = '/api/endpoints/query/usage.api-counts?project=project-7%5C.&interval=daily';
    const headers = { 'X-API-KEY': 'bench-key' };
    const onPg = await startProcess([BIN, 'serve', '--port', '0', '--no-alerts'], pgEnv);
    const onSqlite = await startProcess([BIN, 'serve', '--port', '0', '--no-alerts'], sqliteEnv);
    servers.push(onPg, onSqlite);
    await answered(`${onPg.url}${path}`, headers);
    await answered(`${onSqlite.url}${path}`, headers);
    const [ours, theirs] = inRounds([() => hammer(onPg, path, headers, HTTP_SECONDS), () => hammer(onSqlite, path, headers, HTTP_SECONDS)], HTTP_ROUNDS, true);
    pairedFigure(`serve's cached HTTP throughput on the PostgreSQL store, against on the SQLite file (${loadGenerator()})`, ours.map((o) => o.rate), theirs.map((t) => t.rate), 'req/s', '>= 0.95');

    // Three replicas, one warehouse URL, one store: 50 calls, each sent to the three at once.
    const warehouseDir = join(work, 'store-warehouse');
    await generate(warehouseDir, rows);
    standin = await listening(here('../test/clickhouse-standin.mjs'), [warehouseDir]);
    const warehouse = standin.url;
    const fleetEnv = { SAVEDQ_CLICKHOUSE_URL: warehouse, SAVEDQ_STORE_URL: `${pg.url}?options=${encodeURIComponent('-c search_path=bench_fleet')}`, SAVEDQ_API_KEYS: 'bench-key' };
    const replicas = await Promise.all([1, 2, 3].map(() => startProcess([BIN, 'serve', '--port', '0', '--no-alerts'], { ...fleetEnv, HOME: mkdtempSync(join(work, 'home-')) })));
    servers.push(...replicas);
    await fetch(`${warehouse}/__standin/forget`, { method: 'POST' });
    const CALLS_AT_ONCE = 50;
    const started = Date.now();
    const statuses = await Promise.all(
      Array.from({ length: CALLS_AT_ONCE }, (_, i) => `/api/endpoints/query/usage.api-counts?project=project-${i}%5C.&interval=daily`).flatMap((p) =>
        replicas.map(async (r) => (await fetch(`${r.url}${p}`, { headers })).status),
      ),
    );
    const seconds = (Date.now() - started) / 1000;
    if (statuses.some((s) => s !== 200)) throw new Error(`answers not 200: ${statuses.filter((s) => s !== 200).join(' ')}`);
    const statements = await (await fetch(`${warehouse}/__standin/statements`)).json();
    const asked = statements.filter((s) => s.includes('usage.api-counts') && !/^\s*EXPLAIN/i.test(s)).length;
    const others = statements.filter((s) => !s.includes('usage.api-counts') || /^\s*EXPLAIN/i.test(s)).map((s) => s.slice(0, 60).replace(/\s+/g, ' '));
    if (others.length > 0) console.log(`  (besides, ${others.length} other statements: ${[...new Set(others)].slice(0, 5).join(' | ')})`);
    console.log(`  three replicas, ${CALLS_AT_ONCE} uncached calls sent to each at once: the warehouse was asked ${asked} queries (goal ${CALLS_AT_ONCE}, not ${3 * CALLS_AT_ONCE}); all answered in ${fmt(seconds)} s`);
    figures.push({ name: `warehouse queries for ${CALLS_AT_ONCE} uncached calls sent to three replicas at once, per call`, ratio: asked / CALLS_AT_ONCE, goal: `<= 1 (${CALLS_AT_ONCE})` });
  } finally {
    for (const server of servers) server.child.kill('SIGTERM');
    standin?.child.kill('SIGTERM');
    pg.remove();
  }
}

/**
 * One uncached request, savedq's serve against the closest peer, @hypequery/serve (bench/peer-server.mjs),
 * both on the same ClickHouse URL (the stand-in over the engine, test/clickhouse-standin.mjs): the same
 * query, each round a project neither side has been asked for (so savedq computes and stores it), each
 * request on a fresh connection, the sides next to each other in every round.
 */
async function peerFigure() {
  const rows = 60_000;
  const name = 'usage.api-counts';
  console.log(`\npeer: one uncached request, savedq serve against @hypequery/serve, ${rows.toLocaleString('en-US')} rows a table`);
  const warehouseDir = join(work, 'peer-warehouse');
  await generate(warehouseDir, rows);
  const processes = [];
  try {
    const standin = await listening(here('../test/clickhouse-standin.mjs'), [warehouseDir]);
    processes.push(standin);
    const peer = await listening(here('peer-server.mjs'), [standin.url, name]);
    processes.push(peer);
    const savedq = await startProcess([BIN, 'serve', '--port', '0', '--no-alerts'], { SAVEDQ_CLICKHOUSE_URL: standin.url, SAVEDQ_CACHE_FILE: join(work, 'peer-cache.sqlite'), SAVEDQ_API_KEYS: 'bench-key', HOME: mkdtempSync(join(work, 'home-')) });
    processes.push(savedq);
    const headers = { 'X-API-KEY': 'bench-key' };
    const query = (project) => `project=${encodeURIComponent(project)}&interval=daily`;
    const ours = (project) => `${savedq.url}/api/endpoints/query/${name}?${query(project)}`;
    const theirs = (project) => `${peer.url}/api/${name}?${query(project)}`;
    // The same rows from both (savedq's in its envelope), and neither side's first request counted.
    const counts = (rows) => rows.map((r) => Number(r.total_rest_requests));
    const [a, b] = [await (await fetch(ours('project-1\\.'), { headers })).json(), await (await fetch(theirs('project-1\\.'))).json()];
    if (counts(a.result).length === 0 || JSON.stringify(counts(a.result)) !== JSON.stringify(counts(b))) throw new Error(`savedq and the peer disagree: ${JSON.stringify(a).slice(0, 200)} | ${JSON.stringify(b).slice(0, 200)}`);
    const [savedqMs, peerMs] = [[], []];
    for (let round = 0; round < HTTP_ROUNDS; round++) {
      const project = `project-${round + 2}\\.`;
      const sides = [async () => savedqMs.push(await timedGet(ours(project), headers)), async () => peerMs.push(await timedGet(theirs(project), {}))];
      if (round % 2 === 1) sides.reverse();
      for (const side of sides) await side();
    }
    pairedFigure('one uncached request (a fresh connection, a new project each round), against @hypequery/serve 0.17.1 on the same ClickHouse URL', savedqMs, peerMs, 'ms', '<= 1.0');
  } finally {
    for (const p of processes) p.child.kill('SIGTERM');
  }
}

/** A port of 127.0.0.1 nothing listens on: connections to it are refused. */
async function refusedPort() {
  const s = http.createServer();
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/**
 * A warehouse of several hosts (docs/scaling.md, "When the warehouse fails"), whole CLI processes on
 * ClickHouse stand-ins: a cache-missing call whose first host of three refuses, against the same call
 * with that host left out; a stale answer (every host refusing) against a fresh cache hit of the same
 * rows; and, given BENCH_BEFORE (another build's bin/savedq.js), a miss against that build's on the
 * same host (log_comment and the requests' new settings).
 */
async function warehouseFigures() {
  const rows = 60_000;
  console.log(`\nwarehouse: several hosts, ${rows.toLocaleString('en-US')} rows a table`);
  const dataDir = join(work, 'hosts-warehouse');
  await generate(dataDir, rows);
  const processes = [];
  try {
    const b = await listening(here('../test/clickhouse-standin.mjs'), [dataDir]);
    const c = await listening(here('../test/clickhouse-standin.mjs'), [join(work, 'hosts-empty')]);
    processes.push(b, c);
    const refused = `http://127.0.0.1:${await refusedPort()}`;
    const env = { SAVEDQ_CACHE_FILE: join(work, 'hosts-cache.sqlite'), HOME: mkdtempSync(join(work, 'home-')) };
    const run = (bin, urls, project, extra = []) => timed('node', [bin, ...urls.flatMap((u) => ['--url', u]), 'run', 'usage.api-counts', '-p', `project=${project}`, '-p', 'interval=daily', '--at', AT, '-f', 'json', '-q', ...extra], env);
    // Both sides ask for the same project in a round (projects differ much in how many rows they have).
    let n = 0;
    const [withRefused, without] = sideBySide(
      () => run(BIN, [refused, b.url, c.url], `project-${Math.floor(n++ / 2) + 1}\\.`, ['--no-cache']).ms,
      () => run(BIN, [b.url, c.url], `project-${Math.floor(n++ / 2) + 1}\\.`, ['--no-cache']).ms,
      2 * REPS,
    );
    figure('cache-missing call, the first of three hosts refused, against the same with it left out (whole process)', withRefused, without, 'ms', '<= 1.1');

    // A stale answer: stored while its host answered (cache: 1), the host then gone; a hit: the same
    // rows stored under a query cached an hour. Both on the same (now refused) warehouse.
    const queries = join(work, 'hosts-queries');
    mkdirSync(queries, { recursive: true });
    const sql = readFileSync(join(builtinQueriesDir, 'usage.api-counts.sql'), 'utf8').replace(/^id: .*\n/m, '');
    writeFileSync(join(queries, 'short.sql'), sql.replace(/^cache: \d+$/m, 'cache: 1').replace(/^warm: \d+$/m, ''));
    writeFileSync(join(queries, 'long.sql'), sql.replace(/^cache: \d+$/m, 'cache: 3600').replace(/^warm: \d+$/m, ''));
    const staleEnv = { ...env, SAVEDQ_QUERIES: queries, SAVEDQ_CACHE_FILE: join(work, 'hosts-stale.sqlite') };
    const call = (name) => timed('node', [BIN, '--url', b.url, 'run', name, '-p', 'project=project-1\\.', '-p', 'interval=daily', '--at', AT, '-f', 'json', '-q'], staleEnv);
    const fresh = [call('short'), call('long')].map((r) => r.stdout);
    if (fresh[0] !== fresh[1] || JSON.parse(fresh[0]).length === 0) throw new Error('the stale figure needs rows, alike from both queries');
    // The same warehouse, now refusing: its stand-in stopped, its port left closed; short's second past.
    b.child.kill('SIGTERM');
    await new Promise((resolve) => b.child.once('exit', resolve));
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const [stale, hit] = sideBySide(() => call('short').ms, () => call('long').ms, 2 * REPS);
    if (call('short').stdout !== fresh[0]) throw new Error('the stale answer is not the one stored');
    figure('a stale answer (every host refusing), against a fresh cache hit of the same rows (whole process)', stale, hit, 'ms', '<= 1.1');

    const before = process.env.BENCH_BEFORE;
    if (before === undefined) {
      console.log('  a miss against the build before: give BENCH_BEFORE=<that checkout>/bin/savedq.js to measure it');
      return;
    }
    const again = await listening(here('../test/clickhouse-standin.mjs'), [dataDir]);
    processes.push(again);
    n = 0;
    const [now, then] = sideBySide(
      () => run(BIN, [again.url], `project-${Math.floor(n++ / 2) + 1}\\.`, ['--no-cache']).ms,
      () => run(before, [again.url], `project-${Math.floor(n++ / 2) + 1}\\.`, ['--no-cache']).ms,
      3 * REPS,
    );
    figure('cache-missing call on a server (log_comment, query id, the read settings), against the build before (whole process)', now, then, 'ms', '<= 1.02');
  } finally {
    for (const p of processes) p.child.kill('SIGTERM');
  }
}

/**
 * The warehouse as operators run it (docs/scaling.md): serve's misses side by side on a server (eight
 * distinct calls sent at once by autocannon, each held 200 ms by the warehouse: when the last is
 * answered, against the 200 ms), and a fresh `run` with the first of three hosts hung (taking
 * connections, answering nothing), against the same with that host left out: after the first run has
 * recorded the hung host in the store, whole processes both.
 */
async function operatorsFigures() {
  // Few rows: the stand-in answers each statement 200 ms after it came, its engine running them one
  // after another meanwhile (a server runs them side by side), so eight must take well under 200 ms of
  // engine time for the figure to measure savedq's side, not the stand-in's.
  const rows = 2_000;
  const held = 200;
  console.log(`\noperators: a server's misses side by side, a hung host; ${rows.toLocaleString('en-US')} rows a table`);
  const dataDir = join(work, 'operators-warehouse');
  await generate(dataDir, rows);
  const processes = [];
  try {
    const host = await listening(here('../test/clickhouse-standin.mjs'), [dataDir]);
    processes.push(host);
    const env = { SAVEDQ_CACHE_FILE: join(work, 'operators-cache.sqlite'), SAVEDQ_API_KEYS: 'bench-key', HOME: mkdtempSync(join(work, 'home-')) };
    const server = await startProcess([BIN, '--url', host.url, 'serve', '--port', '0'], env);
    processes.push(server);
    // The definition checked once (its plan asked of the engine) before any call is held.
    const warm = await fetch(`${server.url}/api/endpoints/query/usage.api-counts?project=project-1%5C.&interval=daily`, { headers: { 'X-API-KEY': 'bench-key' } });
    if (warm.status !== 200) throw new Error(`serve answered ${warm.status}: ${await warm.text()}`);
    await host.fault(`delay ${held}`);
    let first = 0;
    const lasts = [];
    for (let round = -1; round < REPS; round++) {
      const out = spawnSync('node', [here('burst.mjs'), `${server.url}/api/endpoints/query/usage.api-counts?project=burst-{i}&interval=daily`, '8', String(first), 'X-API-KEY=bench-key'], { encoding: 'utf8' });
      first += 8;
      const report = JSON.parse(out.stdout);
      if (report.non2xx > 0 || report.errors > 0 || report.requests !== 8) throw new Error(`the burst was not answered whole: ${out.stdout}${out.stderr}`);
      if (round >= 0) lasts.push(report.latency.max);
    }
    pairedFigure(`eight distinct misses through serve at once, each held ${held} ms by the warehouse: the last answered, against ${held} ms`, lasts, lasts.map(() => held), 'ms', '<= 1.5');
    await host.fault('delay 0');

    const hung = await listening(here('../test/clickhouse-standin.mjs'), [join(work, 'operators-hung')]);
    const other = await listening(here('../test/clickhouse-standin.mjs'), [join(work, 'operators-empty')]);
    processes.push(hung, other);
    await hung.fault('hang');
    const runEnv = { ...env, SAVEDQ_CACHE_FILE: join(work, 'operators-hosts.sqlite') };
    const run = (urls, project) => timed('node', [BIN, ...urls.flatMap((u) => ['--url', u]), 'run', 'usage.api-counts', '-p', `project=${project}`, '-p', 'interval=daily', '--at', AT, '-f', 'json', '-q', '--no-cache'], runEnv).ms;
    let n = 0;
    // The warm round: the first process waits the hung host out (3 s) and records it.
    const [withHung, without] = inRounds(
      [() => run([hung.url, host.url, other.url], `project-${Math.floor(n++ / 2) + 1}\\.`), () => run([host.url, other.url], `project-${Math.floor(n++ / 2) + 1}\\.`)],
      2 * REPS,
      true,
    );
    pairedFigure('a fresh run, the first of three hosts hung (recorded in the store by the process before), against the same with it left out (whole process)', withHung, without, 'ms', '<= 1.5');
  } finally {
    for (const p of processes) p.child.kill('SIGTERM');
  }
}

/**
 * Exports (CONTRACT §19): rows a second of `savedq export` to a file, NDJSON, Parquet and Arrow, against the
 * engine's own writer of the same statement into a file (a process that opens the engine on the same
 * data directory and runs SELECT … INTO OUTFILE … FORMAT), whole processes both; and the export's peak
 * memory for 1 M and 4 M rows.
 */
async function exportFigures() {
  const rows = 4_000_000;
  console.log(`\nexport: ${rows.toLocaleString('en-US')} rows a table`);
  const dataDir = join(work, 'export-data');
  await generate(dataDir, rows);
  const queries = join(work, 'export-queries');
  mkdirSync(queries, { recursive: true });
  const sql = 'SELECT id, timestamp, project, event_message, metadata FROM edge_logs LIMIT @n';
  writeFileSync(join(queries, 'every.sql'), `/*\nparams:\n  n: { type: integer, default: 1000 }\nmax_rows: 1000\n*/\n${sql}\n`);
  const env = { SAVEDQ_DATA_DIR: dataDir, SAVEDQ_CACHE_FILE: join(work, 'export-cache.sqlite'), SAVEDQ_QUERIES: queries, HOME: mkdtempSync(join(work, 'home-')) };
  const file = (format) => join(work, `export.${format}`);
  const ours = (format, n) => timed('node', [BIN, '--timeout', '600', 'export', 'every', '-p', `n=${n}`, '-f', format, '-o', file(format), '-q'], env);
  // The engine's own writer: the same statement (its settings as savedq sends them), into a file.
  const engineFormats = { ndjson: 'JSONEachRow', parquet: 'Parquet', arrow: 'ArrowStream' };
  const reference = join(work, 'engine-writer.cjs');
  writeFileSync(
    reference,
    `const { Session } = require(${JSON.stringify(here('../node_modules/chdb'))});
const [dataDir, format, out, n] = process.argv.slice(2);
require('fs').rmSync(out, { force: true });
const s = new Session(dataDir);
s.query(\`${sql.replace('@n', '${Number(n)}')} INTO OUTFILE '\${out}' FORMAT \${format} SETTINGS date_time_output_format = 'iso', output_format_json_quote_64bit_integers = 0, output_format_parquet_string_as_string = 1, output_format_parquet_row_group_size = 122880, output_format_parquet_row_group_size_bytes = 33554432, output_format_parquet_parallel_encoding = 0, output_format_arrow_string_as_string = 1, output_format_arrow_compression_method = 'none', readonly = 2\`, 'CSV');
s.close();
`,
  );
  const engine = (format, n) => timed('node', [reference, dataDir, engineFormats[format], file(`${format}.engine`), String(n)]);
  const million = 1_000_000;
  for (const format of ['ndjson', 'parquet', 'arrow']) {
    const [a, b] = sideBySide(() => ours(format, million).ms, () => engine(format, million).ms);
    if (!(statSync(file(format)).size > 0 && statSync(file(`${format}.engine`)).size > 0)) throw new Error(`the ${format} export wrote nothing`);
    figure(`export of 1 M rows as ${format}, rows a second, against the engine's own writer into a file (whole process)`, million / (a / 1000), million / (b / 1000), 'rows/s', '>= 0.8');
  }
  for (const format of ['ndjson', 'parquet', 'arrow']) {
    const [one, four] = sideBySide(() => ours(format, million).rssMb, () => ours(format, 4 * million).rssMb, 3);
    figure(`export's peak memory as ${format}, 4 M rows against 1 M (flat: the same within 20 %)`, four, one, 'MB', '<= 1.2');
  }
}

/** The HTTP figures alone (they are part of scale at its first size), on a data directory of that size. */
async function httpOnly() {
  const rows = SIZES[0];
  console.log(`\nhttp: ${rows.toLocaleString('en-US')} rows a table`);
  const dataDir = join(work, `data-http-${rows}`);
  await generate(dataDir, rows);
  await httpFigure({ SAVEDQ_DATA_DIR: dataDir, SAVEDQ_CACHE_FILE: join(work, `cache-http-${rows}.sqlite`) });
}

console.log(`savedq bench: Node ${process.version}, ${SIZES.join(', ')} rows a table, ${REPS} repetitions a side, medians`);
const scaling = {};
if (ONLY.includes('scale')) for (const rows of SIZES) scaling[rows] = await scale(rows);
if (ONLY.includes('scale') && SIZES.length > 1) {
  const [small, large] = [SIZES[0], SIZES[SIZES.length - 1]];
  console.log(`\nscaling ${small / 1e6}M -> ${large / 1e6}M rows (x${large / small}):`);
  for (const [endpoint] of CALLS) {
    console.log(`  ${endpoint}: time x${fmt(scaling[large][endpoint].ms / scaling[small][endpoint].ms, 2)}, rows read x${fmt(scaling[large][endpoint].read / Math.max(1, scaling[small][endpoint].read), 2)}`);
  }
}
if (ONLY.includes('http') && !ONLY.includes('scale')) await httpOnly();
if (ONLY.includes('queries')) await queriesFigure();
if (ONLY.includes('load')) await loadFigure();
if (ONLY.includes('tests')) await testsFigure();
if (ONLY.includes('mcp')) await mcpFigures();
if (ONLY.includes('sandbox')) await sandboxFigures();
if (ONLY.includes('alerts')) await alertsFigure();
if (ONLY.includes('store')) await storeFigures();
if (ONLY.includes('peer')) await peerFigure();
if (ONLY.includes('warehouse')) await warehouseFigures();
if (ONLY.includes('operators')) await operatorsFigures();
if (ONLY.includes('export')) await exportFigures();
console.log('\nsummary (ratio, goal):');
for (const f of figures) console.log(`  ${f.ratio.toFixed(2).padStart(6)}  ${f.goal.padEnd(8)} ${f.name}${f.within ? ` (median within ${fmt(f.within[0], 2)}–${fmt(f.within[1], 2)})` : ''}`);
