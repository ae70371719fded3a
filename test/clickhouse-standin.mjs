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
// GET /__standin/log the same with what each carried (query id, settings, traceparent) and whether
// it was cancelled (`closed`: its connection closed before its answer; `killed`: a KILL QUERY of its
// id); POST /__standin/forget empties both.
//
// Faults, one line each on its standard input, each acknowledged by `ok <line>` on standard output:
//   refuse        stop listening (connections refused), closing those open; `accept` listens again, same port
//   hang          take every request (/ping too) and never answer it
//   slow          hold every statement (not /ping, not KILL QUERY) until its connection closes or it is killed
//   reset         answer statements 200, send half the answer, then reset the connection
//   exception     answer statements 200, some rows, then `Code: 241. DB::Exception: …` (as before 25.11)
//   exception-tagged   the same framed as ClickHouse 25.11+ does (X-ClickHouse-Exception-Tag)
//   delay <ms>    answer every statement no sooner than that long after it came, statements side by side
//                 (as a server runs many at once, each taking that long); the engine runs them in turn
//                 meanwhile
//   none          no fault
//
// Users with profiles, as ClickHouse's users.xml gives them (CONTRACT §20), one line each:
//   profile <user> readonly=1                 any setting in the URL or a SETTINGS clause refused (Code 164,
//                                             READONLY), as is any statement but a read
//   profile <user> readonly=2                 the `readonly` setting refused (164), and any write
//   profile <user> <setting><=<n> …           a constraint: a value past the bound refused (Code 452,
//                                             SETTING_CONSTRAINT_VIOLATION); >= a lower bound; <setting>=const
//                                             the setting fixed ("should not be changed")
// The user is the request's (Basic authorization, or the `user` parameter); getSetting('readonly') answers
// its level.
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
/**
 * Settings of the request itself, which a server reads before the statement: the embedded engine would
 * take them as the session's (chDB applies settings as SET), and a readonly would then refuse the next insert.
 */
const REQUEST_ONLY = new Set(['readonly', 'cancel_http_readonly_queries_on_client_close']);
const statements = [];
/** What each statement carried, and whether it was cancelled. */
const log = [];
let fault = 'none';
/** How long after it came every statement is answered at the soonest (the `delay` fault). */
let delayMs = 0;
/** Users' profiles, by name: their readonly level and their constraints. */
const profiles = new Map();
/** Statements held (slow), by query id: released by a KILL QUERY of the id. */
const held = new Map();

function bodyOf(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The user a request is made as: its Basic authorization's, or its `user` parameter, else default. */
function userOf(req, url) {
  const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
  if (basic) return Buffer.from(basic[1], 'base64').toString('utf8').split(':')[0];
  return url.searchParams.get('user') ?? 'default';
}

/** Settings a request changes: its URL's (but what the client sends beside them) and its SETTINGS clause's. */
function settingsOf(url, query) {
  const changed = [...url.searchParams].filter(([name]) => !name.startsWith('param_') && !NOT_SETTINGS.has(name));
  const clause = /\bSETTINGS\s+((?:\w+\s*=\s*(?:'(?:[^'\\]|\\.)*'|[^,\s]+)\s*,?\s*)+)\s*(?:FORMAT\s+\w+\s*)?$/i.exec(query);
  if (clause) for (const m of clause[1].matchAll(/(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|[^,\s]+)/g)) changed.push([m[1], m[2].replace(/^'|'$/g, '')]);
  return changed;
}

/** What a user's profile refuses of a request (the error a server answers), or undefined. */
function refusal(profile, url, query) {
  if (!profile) return undefined;
  const readonlyError = (message) => ({ code: 164, type: 'READONLY', message });
  const isRead = /^(?:\s+|\/\*[\s\S]*?\*\/|--[^\n]*\n)*(?:SELECT|WITH|EXPLAIN|DESCRIBE|DESC|SHOW|EXISTS|\()/i.test(query);
  if (profile.readonly > 0 && !isRead) return readonlyError('Cannot execute query in readonly mode');
  for (const [name, value] of settingsOf(url, query)) {
    if (profile.readonly === 1 || (profile.readonly === 2 && name === 'readonly')) return readonlyError(`Cannot modify '${name}' setting in readonly mode`);
    const bound = profile.constraints.get(name);
    if (bound?.fixed) return { code: 452, type: 'SETTING_CONSTRAINT_VIOLATION', message: `Setting ${name} should not be changed` };
    if (bound?.max !== undefined && Number(value) > bound.max) return { code: 452, type: 'SETTING_CONSTRAINT_VIOLATION', message: `Setting ${name} shouldn't be greater than ${bound.max}` };
    if (bound?.min !== undefined && Number(value) < bound.min) return { code: 452, type: 'SETTING_CONSTRAINT_VIOLATION', message: `Setting ${name} shouldn't be less than ${bound.min}` };
  }
  return undefined;
}

/** A string literal of the engine's. */
const literal = (text) => `'${String(text).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** system.settings as a user of `profile` sees it (a subquery in its place). */
function settingsView(profile) {
  const bound = (which) => {
    const cases = [...profile.constraints].filter(([, b]) => b[which] !== undefined).flatMap(([name, b]) => [`name = ${literal(name)}`, literal(b[which])]);
    return cases.length === 0 ? which : `multiIf(${cases.join(', ')}, ${which})`;
  };
  const fixed = [...profile.constraints].filter(([, b]) => b.fixed).map(([name]) => literal(name));
  const readonly = profile.readonly === 1 ? '1' : fixed.length > 0 ? `if(name IN (${fixed.join(', ')}), 1, readonly)` : 'readonly';
  return `(SELECT name, if(name = 'readonly', ${literal(profile.readonly)}, value) AS value, ${bound('min')} AS min, ${bound('max')} AS max, toUInt8(${readonly}) AS readonly FROM system.settings)`;
}

/** One statement at a time, as a server's queue would seem to a client that waits its turn. */
let turn = Promise.resolve();

const server = createServer(async (req, res) => {
  const arrived = Date.now();
  const url = new URL(req.url ?? '/', 'http://standin');
  if (fault === 'hang') return; // taken, never answered
  if (url.pathname === '/ping') return res.end('Ok.\n');
  if (url.pathname === '/__standin/statements') return res.end(JSON.stringify(statements));
  if (url.pathname === '/__standin/log') return res.end(JSON.stringify(log));
  if (url.pathname === '/__standin/forget') {
    statements.length = 0;
    log.length = 0;
    return res.end('[]');
  }
  const body = await bodyOf(req);
  const inUrl = url.searchParams.get('query');
  let query = inUrl ?? body.toString('utf8');
  const entry = {
    query: query.slice(0, 4000),
    query_id: url.searchParams.get('query_id'),
    session_id: url.searchParams.get('session_id'),
    settings: Object.fromEntries([...url.searchParams].filter(([name]) => !name.startsWith('param_') && !NOT_SETTINGS.has(name))),
    log_comment: /\blog_comment = '((?:[^'\\]|\\.)*)'/.exec(query)?.[1]?.replace(/\\(.)/g, '$1') ?? null,
    traceparent: req.headers.traceparent ?? null,
    cancelled: null,
  };
  // The query id to kill, given as a parameter (as savedq sends it) or a literal.
  const kill = /^\s*KILL QUERY WHERE query_id = (?:'([^']*)'|\{(\w+):String\})/i.exec(query);
  if (kill) {
    log.push(entry);
    const id = kill[1] ?? url.searchParams.get(`param_${kill[2]}`);
    entry.kills = id;
    const victim = held.get(id);
    if (victim) {
      victim.entry.cancelled ??= 'killed';
      victim.release();
    } else {
      const done = log.find((e) => e.query_id === id);
      if (done) done.killed = true;
    }
    return res.end('');
  }
  // What the user's profile refuses, as a server refuses it, before anything runs.
  const user = userOf(req, url);
  entry.user = user;
  const refused = refusal(profiles.get(user), url, query);
  if (refused) {
    entry.refused = refused.code;
    log.push(entry);
    res.writeHead(500, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Exception-Code': String(refused.code) });
    return res.end(`Code: ${refused.code}. DB::Exception: ${refused.message}. (${refused.type}) (version 24.8.1.1 (official build))\n`);
  }
  if (/^\s*SELECT getSetting\('readonly'\)/i.test(query)) {
    log.push(entry);
    return res.end(`${profiles.get(user)?.readonly ?? 0}\n`);
  }
  // system.settings as the user sees it, as a server shows it: the profile's readonly level as the value
  // of `readonly`, its bounds as `min` and `max`, and `readonly` 1 for a setting the user may not change.
  const profile = profiles.get(user);
  if (profile && /\bsystem\.settings\b/.test(query)) query = query.replace(/\bsystem\.settings\b/g, settingsView(profile));
  if (fault === 'slow') {
    log.push(entry);
    statements.push(entry.query);
    await new Promise((release) => {
      held.set(entry.query_id, { entry, release });
      res.once('close', () => {
        if (!res.writableFinished) entry.cancelled ??= 'closed';
        release();
      });
    });
    held.delete(entry.query_id);
    if (!res.destroyed) res.writeHead(500, { 'X-ClickHouse-Exception-Code': '394' }).end('Code: 394. DB::Exception: Query was cancelled. (QUERY_WAS_CANCELLED) (version 24.8.1.1 (official build))\n');
    return;
  }
  res.once('close', () => {
    if (!res.writableFinished) entry.cancelled ??= 'closed';
  });
  const faulty = fault;
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
    else if (!NOT_SETTINGS.has(name) && !REQUEST_ONLY.has(name)) clickhouse_settings[name] = value;
  }
  const received = (inUrl ?? body.toString('utf8')).slice(0, 4000);
  /** The statement run by the engine, its answer read whole (or its error): one statement at a time. */
  const run = async () => {
    statements.push(received);
    log.push(entry);
    if (log.length > 10_000) log.shift();
    if (statements.length > 10_000) statements.shift();
    try {
      const result = await connection.exec({ query, query_params, clickhouse_settings, ...(values ? { values } : {}) });
      const chunks = [];
      for await (const chunk of result.stream) chunks.push(Buffer.from(chunk));
      return { out: Buffer.concat(chunks), summary: result.summary };
    } catch (err) {
      // chdb hands what a failed statement wrote to the next statement of the connection, before its own
      // answer (embedded.ts's drainedAfterFailure); a server has no such thing: dropped here.
      await connection.exec({ query: 'SELECT 1' }).then((r) => r.stream.resume(), () => undefined);
      return { err };
    } finally {
      if (dataFile) rmSync(dataFile, { force: true });
    }
  };
  const done = turn.then(run, run);
  turn = done.catch(() => undefined);
  const { out, summary, err } = await done;
  // Held until `delay` has passed since it came (the engine's turn inside that time), the statements
  // held side by side: as a server answers many queries that each take that long.
  const hold = arrived + delayMs - Date.now();
  if (hold > 0) await new Promise((resolve) => setTimeout(resolve, hold));
  if (err !== undefined) {
    const code = Number(err?.code ?? 1001) || 1001;
    const type = err?.type ?? 'STD_EXCEPTION';
    const message = String(err?.message ?? err).replace(/^Code: \d+\. DB::Exception: /, '');
    res.writeHead(500, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Exception-Code': String(code) });
    res.end(`Code: ${code}. DB::Exception: ${message} (${type}) (version 24.8.1.1 (official build))\n`);
    return;
  }
  const headers = { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Summary': JSON.stringify(summary ?? {}), 'X-ClickHouse-Query-Id': entry.query_id ?? '' };
  if (faulty === 'reset') {
    // Half the answer, then the connection reset (RST), as a host that dies mid-answer.
    res.writeHead(200, { ...headers, 'Content-Length': String(out.length) });
    res.write(out.subarray(0, Math.floor(out.length / 2)), () => res.socket?.resetAndDestroy());
    return;
  }
  if (faulty === 'exception' || faulty === 'exception-tagged') {
    // 200 and the first rows, then the error the server met on the way, as ClickHouse writes it.
    const message = 'Code: 241. DB::Exception: Memory limit (total) exceeded: would use 9.31 GiB (attempt to allocate chunk of 4194304 bytes), maximum: 9.31 GiB. (MEMORY_LIMIT_EXCEEDED) (version 24.8.1.1 (official build))\n';
    const part = out.subarray(0, Math.floor(out.length / 2));
    if (faulty === 'exception') {
      res.writeHead(200, headers);
      res.end(Buffer.concat([part, Buffer.from(message)]));
    } else {
      const tag = 'sdqtag0123456789';
      res.writeHead(200, { ...headers, 'X-ClickHouse-Exception-Tag': tag });
      res.end(Buffer.concat([part, Buffer.from(`\r\n__exception__\r\n${tag}\n${message}${Buffer.byteLength(message)} ${tag}\r\n__exception__\r\n`)]));
    }
    return;
  }
  res.writeHead(200, headers);
  res.end(out);
});

let port = 0;
server.listen(0, '127.0.0.1', () => {
  port = server.address().port;
  process.stdout.write(`listening ${port}\n`);
});

/** Faults, one a line on standard input (see the top of this file). */
let input = '';
process.stdin.setEncoding('utf8').on('data', (text) => {
  input += text;
  for (let end = input.indexOf('\n'); end >= 0; end = input.indexOf('\n')) {
    const line = input.slice(0, end).trim();
    input = input.slice(end + 1);
    const ack = () => process.stdout.write(`ok ${line}\n`);
    if (line === 'refuse') {
      if (server.listening) server.close();
      server.closeAllConnections();
      ack();
    } else if (line === 'accept') {
      if (server.listening) ack();
      else server.listen(port, '127.0.0.1', ack);
    } else if (line.startsWith('profile ')) {
      const [, user, ...rules] = line.split(/\s+/);
      const profile = { readonly: 0, constraints: new Map() };
      for (const rule of rules) {
        const m = /^(\w+)(<=|>=|=)(.+)$/.exec(rule);
        if (!m) continue;
        if (m[1] === 'readonly') profile.readonly = Number(m[3]);
        else if (m[3] === 'const') profile.constraints.set(m[1], { fixed: true });
        else profile.constraints.set(m[1], { ...profile.constraints.get(m[1]), [m[2] === '<=' ? 'max' : 'min']: Number(m[3]) });
      }
      profiles.set(user, profile);
      ack();
    } else if (line.startsWith('delay ')) {
      delayMs = Number(line.slice('delay '.length));
      ack();
    } else {
      fault = line;
      // Held statements are let go when the fault ends.
      if (line !== 'slow') for (const { release } of held.values()) release();
      ack();
    }
  }
});
const stop = () => server.close(() => connection.close().finally(() => (rmSync(inserts, { recursive: true, force: true }), process.exit(0))));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
