import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAlertFile } from '../../src/alerts/spec.js';
import { SandboxRefusedError } from '../../src/errors.js';
import { plural } from '../../src/words.js';
import { AT, DAY, HOUR, MINUTE, atOffset, binPath, cli, eventually, load, LONG_TEST_MS, runProgram, startCli, startServe, tempDir, testLibrary } from '../helpers.js';

// docs/alerts.md: alerts, tried as cron and serve run them: the built CLI on a real data directory and
// cache file, a real webhook receiver on 127.0.0.1, real commands; time moved with --at.

const dir = tempDir('savedq-alerts-');
const dataDir = join(dir, 'data');

/** A webhook receiver: what it was sent, each request answered 500 while `failing` says so. */
async function receiver(failFirst = 0) {
  const got: { body: Record<string, unknown>; headers: IncomingHttpHeaders; path: string }[] = [];
  let attempts = 0;
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8').on('data', (c: string) => (text += c));
    req.on('end', () => {
      attempts += 1;
      if (attempts <= failFirst) {
        res.writeHead(500).end('not now');
        return;
      }
      got.push({ body: JSON.parse(text) as Record<string, unknown>, headers: req.headers, path: req.url ?? '' });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks/T000-s3cr3t-path`, got, attempts: () => attempts };
}

/** A queries folder of these files, and the flags of a CLI on it with a cache file of its own. */
function folder(name: string, files: Record<string, string>): string[] {
  const queries = join(dir, name);
  mkdirSync(queries, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(queries, file), text);
  return ['--data-dir', dataDir, '--cache-file', join(dir, `${name}.sqlite`), '--queries', queries];
}

function invocation(project: string, timestamp: string, status: number): string {
  return JSON.stringify({ timestamp, event_message: `POST | ${status}`, metadata: { project_ref: project, function_id: 'f1', execution_time_ms: 12.5, response: { status_code: status } } });
}

/** Loads invocations through `savedq load`, as a user does. */
async function loadInvocations(lines: string[]): Promise<void> {
  const file = join(dir, `load-${Date.now()}-${Math.random()}.ndjson`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  const loaded = await cli(['--data-dir', dataDir, 'load', 'function_edge_logs', file]);
  expect(loaded.stderr).toContain(`loaded ${plural(lines.length, 'row')}`);
}

const alertFile = (url: string, extra = '', project = 'alerting') => `description: Function errors in the last day.
query: functions.invocation-stats
params: { project: ${project}, interval: 1day }
when: error_count > 0
every: 5m
${extra}notify:
  - webhook: ${url}
`;

beforeAll(async () => {
  // Failing invocations an hour before AT, for a few projects; nothing else.
  await loadInvocations(
    ['alerting', 'flaky', 'crashy', 'pending', 'busy', 'gone'].flatMap((p) => [invocation(p, atOffset(-HOUR), 500), invocation(p, atOffset(-HOUR + MINUTE), 200)]),
  );
}, LONG_TEST_MS);

describe('an alert on two data directories sharing one cache file', () => {
  it('keeps a state of its own on each: the other directory neither resolves nor fires it again', async () => {
    const hook = await receiver();
    const flags = folder('two-sources', { 'fn-errors.alert.yaml': alertFile(hook.url) });
    const fired = await cli([...flags, 'alerts', 'check', '--at', AT]);
    expect(fired.stderr).toContain('firing  fn-errors (was new): 1 row matched');
    // The same cache file and queries, a data directory without those rows: its own first evaluation, ok, quiet.
    const other = flags.map((flag, i) => (flags[i - 1] === '--data-dir' ? join(dir, 'data-without-errors') : flag));
    const elsewhere = await cli([...other, 'alerts', 'check', '--at', atOffset(6 * MINUTE)]);
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    expect(elsewhere.stderr).toContain('ok      fn-errors (was new): 0 rows matched');
    const listed = JSON.parse((await cli([...other, 'alerts', '-f', 'json'])).stdout) as { state: string }[];
    expect(listed.map((a) => a.state)).toEqual(['ok']);
    // Back on the first: still firing, as it was, and nothing sent since the first notification.
    const back = await cli([...flags, 'alerts', 'check', '--at', atOffset(12 * MINUTE)]);
    expect(back.stderr).toContain('alerts: 1 evaluated; 0 ok, 0 pending, 1 firing, 0 error');
    expect(back.stderr).not.toContain('(was ok)');
    expect(hook.got.map((g) => g.body.new_state)).toEqual(['firing']);
  }, LONG_TEST_MS);
});

describe('an alert from firing to resolved', () => {
  it('fires once with the rows, stays quiet while nothing changes, and says resolved once after the data changes', async () => {
    const hook = await receiver();
    const flags = folder('first', { 'fn-errors.alert.yaml': alertFile(hook.url) });
    const first = await cli([...flags, 'alerts', 'check', '--at', AT]);
    expect(first.code).toBe(1);
    expect(first.stderr).toContain('firing  fn-errors (was new): 1 row matched');
    expect(first.stderr).toContain('savedq: alerts not ok: fn-errors firing.');
    expect(hook.got).toHaveLength(1);
    const sent = hook.got[0] as (typeof hook.got)[number];
    expect(sent.path).toBe('/hooks/T000-s3cr3t-path');
    expect(sent.body).toMatchObject({ alert: 'fn-errors', query: 'functions.invocation-stats', params: { project: 'alerting', interval: '1day' }, old_state: null, new_state: 'firing', matched: 1, when: 'error_count > 0' });
    expect(sent.body.rows).toEqual([expect.objectContaining({ count: 2, error_count: 1 })]);
    expect(sent.body.text).toMatch(/^savedq alert fn-errors is FIRING: 1 row of functions.invocation-stats \(project=alerting, interval=1day\) match error_count > 0/);
    expect(sent.headers['idempotency-key']).toBe(sent.body.id);
    // The webhook's address may hold a secret: never printed whole.
    expect(first.stderr + first.stdout).not.toContain('s3cr3t');
    expect(first.stderr).toContain(`notified fn-errors firing to webhook http://127.0.0.1:${new URL(hook.url).port}/…`);

    // Not due a minute later; due and unchanged six minutes later: nothing sent either time.
    const early = await cli([...flags, 'alerts', 'check', '--at', atOffset(MINUTE)]);
    expect(early.stderr).toContain('alerts: 0 evaluated');
    const again = await cli([...flags, 'alerts', 'check', '--at', atOffset(6 * MINUTE)]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('alerts: 1 evaluated; 0 ok, 0 pending, 1 firing, 0 error');
    expect(hook.got).toHaveLength(1);

    // Clean invocations two days on: the day before then holds no error.
    await loadInvocations([invocation('alerting', atOffset(2 * DAY - HOUR), 200)]);
    const resolved = await cli([...flags, 'alerts', 'check', '--at', atOffset(2 * DAY)]);
    expect(resolved.code).toBe(0);
    expect(resolved.stderr).toContain('ok      fn-errors (was firing): 0 rows matched');
    expect(hook.got).toHaveLength(2);
    expect(hook.got[1]?.body).toMatchObject({ old_state: 'firing', new_state: 'ok', matched: 0, rows: [] });
    expect(hook.got[1]?.body.text).toMatch(/is RESOLVED/);
    const quiet = await cli([...flags, 'alerts', 'check', '--at', atOffset(2 * DAY + 10 * MINUTE), '--quiet']);
    expect(quiet).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect(hook.got).toHaveLength(2);

    // `alerts` lists it: its state since when, its last evaluation, the webhook's host alone.
    const listed = await cli([...flags, 'alerts', '-f', 'json']);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ alert: 'fn-errors', state: 'ok', since: new Date(Date.parse(atOffset(2 * DAY))).toISOString(), evaluated: new Date(Date.parse(atOffset(2 * DAY + 10 * MINUTE))).toISOString(), every: '5m', waiting: 0 }),
    ]);
    expect(listed.stdout).not.toContain('s3cr3t');
    // Its history, newest first.
    const history = await cli([...flags, 'alerts', 'history', 'fn-errors', '-f', 'json']);
    expect(JSON.parse(history.stdout)).toEqual([
      { at: new Date(Date.parse(atOffset(2 * DAY))).toISOString(), old_state: 'firing', new_state: 'ok', detail: '0 rows matched' },
      { at: new Date(Date.parse(AT)).toISOString(), old_state: null, new_state: 'firing', detail: '1 row matched' },
    ]);
    expect(await cli([...flags, 'alerts', 'history', 'fn-errors', '-n', '0'])).toMatchObject({ code: 2, stderr: 'savedq: invalid --limit "0": a whole number from 1 to 1000.\n' });
    // Each subcommand's own -f, and savedq alerts's as the default subcommand's.
    const report = await cli([...flags, 'alerts', 'check', '--force', '--at', atOffset(2 * DAY + 20 * MINUTE), '-f', 'json']);
    expect(JSON.parse(report.stdout)).toMatchObject({ evaluated: [{ alert: 'fn-errors', old_state: 'ok', new_state: 'ok', matched: 0, notified: false }], deliveries: [], states: { 'fn-errors': 'ok' } });
    expect((await cli([...flags, 'alerts', 'history', 'fn-errors', '-f', 'csv'])).stdout.split('\r\n')[0]).toBe('at,old_state,new_state,detail');
    expect((await cli([...flags, 'alerts', '-f', 'csv'])).stdout.split('\r\n')[0]).toBe('alert,state,since,evaluated,every,query,notify');
  }, LONG_TEST_MS);
});

describe('delivery', () => {
  it('retries a webhook that answers 500 twice, with backoff, then delivers each change once and in order', async () => {
    const hook = await receiver(2);
    const flags = folder('flaky', { 'flaky.alert.yaml': alertFile(hook.url, '', 'flaky') });
    const first = await cli([...flags, 'alerts', 'check', '--at', AT]);
    expect(first.stderr).toContain('could not notify flaky firing to webhook');
    expect(first.stderr).toContain('answered 500');
    expect(hook.attempts()).toBe(1);
    // The first retry is a minute on, not before.
    await cli([...flags, 'alerts', 'check', '--at', atOffset(30_000)]);
    expect(hook.attempts()).toBe(1);
    await cli([...flags, 'alerts', 'check', '--at', atOffset(MINUTE)]);
    expect(hook.attempts()).toBe(2);
    const waiting = JSON.parse((await cli([...flags, 'alerts', '-f', 'json'])).stdout) as { waiting: number; last_error: string }[];
    expect(waiting[0]).toMatchObject({ waiting: 1, last_error: 'answered 500 Internal Server Error' });
    // Two days on it resolves: the firing notification goes first, then the resolution, each once.
    const later = await cli([...flags, 'alerts', 'check', '--at', atOffset(2 * DAY)]);
    expect(later.code).toBe(0);
    expect(hook.got.map((g) => [g.body.old_state, g.body.new_state])).toEqual([
      [null, 'firing'],
      ['firing', 'ok'],
    ]);
    await cli([...flags, 'alerts', 'check', '--at', atOffset(2 * DAY + HOUR)]);
    expect(hook.attempts()).toBe(4);
  }, LONG_TEST_MS);

  it('delivers, on the next check, a change decided by a process killed before it delivered it', async () => {
    const hook = await receiver();
    const marker = join(dir, 'killed-once');
    // The first notify entry is a command that kills savedq (its parent) the first time it runs: the
    // change is decided and kept; nothing has been delivered.
    const killer = `  - command: [sh, -c, 'if [ ! -e "$0" ]; then : > "$0"; kill -9 $PPID; fi; cat > /dev/null', ${marker}]\n`;
    const flags = folder('crashy', { 'crashy.alert.yaml': alertFile(hook.url, '', 'crashy').replace('notify:\n', `notify:\n${killer}`) });
    const killed = await cli([...flags, 'alerts', 'check', '--at', AT]);
    expect(killed.code).toBeNull();
    expect(existsSync(marker)).toBe(true);
    expect(hook.got).toHaveLength(0);
    const next = await cli([...flags, 'alerts', 'check', '--at', atOffset(10_000)]);
    expect(next.stderr).toContain('notified crashy firing to command sh');
    expect(next.stderr).toContain('notified crashy firing to webhook');
    expect(next.stderr).toContain('alerts: 0 evaluated');
    expect(hook.got.map((g) => g.body.new_state)).toEqual(['firing']);
    await cli([...flags, 'alerts', 'check', '--at', atOffset(20_000)]);
    expect(hook.got).toHaveLength(1);
  }, LONG_TEST_MS);

  it('gives up on a notification after 24 h, saying so even with --quiet, and goes on with the next', async () => {
    // A port nothing listens on: every attempt is refused.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const flags = folder('gone', { 'gone.alert.yaml': alertFile(`http://127.0.0.1:${port}/hooks/s3cr3t`, '', 'gone') });
    const first = await cli([...flags, 'alerts', 'check', '--at', AT]);
    expect(first.stderr).toContain(`could not notify gone firing to webhook http://127.0.0.1:${port}/… (ECONNREFUSED); tried again later`);
    const day = await cli([...flags, 'alerts', 'check', '--at', atOffset(25 * HOUR), '--quiet']);
    // The day before holds no error any more: resolved, and that one is tried in its turn.
    expect(day).toMatchObject({ code: 0, stdout: '', stderr: `warning: gave up notifying gone firing to webhook http://127.0.0.1:${port}/… after 24 h: ECONNREFUSED\n` });
    expect((JSON.parse((await cli([...flags, 'alerts', '-f', 'json'])).stdout) as unknown[])[0]).toMatchObject({ state: 'ok', waiting: 1, last_error: 'ECONNREFUSED' });
  }, LONG_TEST_MS);

  it('runs a command with the JSON on its standard input', async () => {
    const out = join(dir, 'mail.json');
    const flags = folder('command', {
      'by-mail.alert.yaml': `query: functions.invocation-stats\nparams: { project: alerting, interval: 1day }\nwhen: error_count > 0\nevery: 1m\nnotify:\n  - command: [sh, -c, 'cat > "$0"; echo "$SAVEDQ_ALERT $SAVEDQ_ALERT_STATE" >> "$0.env"', ${out}]\n`,
    });
    const result = await cli([...flags, 'alerts', 'check', '--at', AT]);
    expect(result.code).toBe(1);
    expect(JSON.parse(execFileSync('cat', [out], { encoding: 'utf8' }))).toMatchObject({ alert: 'by-mail', new_state: 'firing', matched: 1 });
    expect(execFileSync('cat', [`${out}.env`], { encoding: 'utf8' })).toBe('by-mail firing\n');
  }, LONG_TEST_MS);
});

describe('what a check cannot see', () => {
  it('appends one line of JSON a notification to a command that appends what it reads', async () => {
    const out = join(dir, 'alerts.ndjson');
    const flags = folder('lines', {
      'lines.alert.yaml': `query: functions.invocation-stats\nparams: { project: alerting, interval: 1day }\nwhen: error_count > 0\nevery: 1m\nnotify:\n  - command: [sh, -c, 'cat >> "$0"', ${out}]\n`,
    });
    expect((await cli([...flags, 'alerts', 'check', '--at', AT])).code).toBe(1);
    expect((await cli([...flags, 'alerts', 'check', '--at', atOffset(2 * DAY)])).code).toBe(0);
    const lines = readFileSync(out, 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => (JSON.parse(l) as { new_state: string }).new_state)).toEqual(['firing', 'ok']);
  }, LONG_TEST_MS);

  it('reports an alert it keeps whose file it cannot find (the wrong folders, as cron gives) as gone, exits 1, and forgets it when told', async () => {
    const flags = folder('moved', { 'moved.alert.yaml': alertFile('http://127.0.0.1:9/unused', '', 'alerting').replace(/notify:[\s\S]*$/, "notify:\n  - command: ['true']\n") });
    expect((await cli([...flags, 'alerts', 'check', '--at', AT])).code).toBe(1);
    // The same cache file, another folder: as a cron line that left out the queries folder.
    const elsewhere = join(dir, 'no-alerts-here');
    mkdirSync(elsewhere, { recursive: true });
    const blind = [...flags.slice(0, -1), elsewhere];
    const check = await cli([...blind, 'alerts', 'check', '--at', atOffset(MINUTE)]);
    expect(check.code).toBe(1);
    expect(check.stderr).toContain(`gone    moved (was firing): no moved.alert.yaml in ${elsewhere}; if it was removed on purpose, savedq alerts forget moved\n`);
    expect(check.stderr).toContain('alerts: 0 evaluated; 0 ok, 0 pending, 0 firing, 0 error; 1 gone\n');
    expect(check.stderr).toContain('savedq: alerts not ok: moved gone.\n');
    // Said with --quiet too, and listed.
    const quiet = await cli([...blind, 'alerts', 'check', '--quiet']);
    expect(quiet).toMatchObject({ code: 1, stdout: '' });
    expect(quiet.stderr).toMatch(/^gone {4}moved \(was firing\)/);
    expect((await cli([...blind, 'alerts'])).stderr).toContain('gone    moved (was firing)');
    // Forgetting one that has its file is refused; one gone is forgotten, and the check is clean.
    expect(await cli([...flags, 'alerts', 'forget', 'moved'])).toMatchObject({ code: 2, stderr: 'savedq: the alert moved has a file in the queries folders; remove the file first, then forget it.\n' });
    expect(await cli([...blind, 'alerts', 'forget', 'moved'])).toMatchObject({ code: 0, stderr: 'forgot moved (was firing): its state, history and undelivered notifications.\n' });
    const clean = await cli([...blind, 'alerts', 'check']);
    expect(clean).toMatchObject({ code: 0, stderr: `no alerts: no <name>.alert.yaml file in ${elsewhere}.\nalerts: 0 evaluated; 0 ok, 0 pending, 0 firing, 0 error\n` });
    expect((await cli([...blind, 'alerts', 'forget', 'moved'])).code).toBe(2);
  }, LONG_TEST_MS);

  it('says which folders it takes when HOME is not set, even with --quiet', async () => {
    const cacheFile = join(dir, 'homeless.sqlite');
    const r = await runProgram(process.execPath, [binPath, '--data-dir', dataDir, '--cache-file', cacheFile, 'alerts', 'check', '--quiet'], { env: {}, timeoutMs: LONG_TEST_MS });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^warning: HOME is not set, so savedq takes \/\S* for it: (the queries folder|no queries folder, as there is no) \S+\/\.config\/savedq\/queries \(--queries\)\. Set HOME, or give each of these\.\n/);
    // Every folder given: nothing guessed, nothing said.
    const given = await runProgram(process.execPath, [binPath, '--data-dir', dataDir, '--cache-file', cacheFile, '--queries', dir, 'alerts', 'check', '--quiet'], { env: {}, timeoutMs: LONG_TEST_MS });
    expect(given).toMatchObject({ code: 0, stderr: '' });
  }, LONG_TEST_MS);
});

describe('states', () => {
  it('is pending for its for:, then firing; repeats while firing every repeat:', async () => {
    const hook = await receiver();
    const flags = folder('pending', { 'slow.alert.yaml': alertFile(hook.url, 'for: 10m\nrepeat: 1h\n', 'pending') });
    const pending = await cli([...flags, 'alerts', 'check', '--at', AT]);
    // Pending is no failure, and says nothing to anyone.
    expect(pending.code).toBe(0);
    expect(pending.stderr).toContain('pending slow (was new): 1 row matched');
    expect((await cli([...flags, 'alerts', 'check', '--at', atOffset(6 * MINUTE)])).code).toBe(0);
    expect(hook.got).toHaveLength(0);
    const firing = await cli([...flags, 'alerts', 'check', '--at', atOffset(11 * MINUTE)]);
    expect(firing.code).toBe(1);
    expect(hook.got.map((g) => [g.body.old_state, g.body.new_state])).toEqual([['pending', 'firing']]);
    await cli([...flags, 'alerts', 'check', '--at', atOffset(40 * MINUTE)]);
    expect(hook.got).toHaveLength(1);
    await cli([...flags, 'alerts', 'check', '--at', atOffset(71 * MINUTE)]);
    expect(hook.got.map((g) => [g.body.old_state, g.body.new_state])).toEqual([
      ['pending', 'firing'],
      ['firing', 'firing'],
    ]);
    expect(hook.got[1]?.body.text).toMatch(/is STILL FIRING/);
  }, LONG_TEST_MS);

  it('is error when its query fails, says so, and resolved once the query runs again', async () => {
    const hook = await receiver();
    const flags = folder('failing', {
      'boom.sql': `/*\nid: 0c5b8a42-8c1e-4d1b-9d55-6f1b2b0f3a10\n*/\nSELECT throwIf(1 = 1, 'the source is gone') AS x\n`,
      'boom.alert.yaml': `query: boom\nwhen: x > 0\nevery: 1m\nnotify:\n  - webhook: ${hook.url}\n`,
    });
    const failed = await cli([...flags, 'alerts', 'check', '--at', AT]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/error {3}boom \(was new\): .*the source is gone/);
    expect(hook.got[0]?.body).toMatchObject({ new_state: 'error', matched: 0 });
    expect(hook.got[0]?.body.error).toMatch(/the source is gone/);
    expect(hook.got[0]?.body.text).toMatch(/^savedq alert boom is in ERROR/);
    writeFileSync(join(flags[5] as string, 'boom.sql'), `/*\nid: 0c5b8a42-8c1e-4d1b-9d55-6f1b2b0f3a10\n*/\nSELECT 0 AS x\n`);
    const back = await cli([...flags, 'alerts', 'check', '--at', atOffset(MINUTE)]);
    expect(back.code).toBe(0);
    expect(hook.got.map((g) => [g.body.old_state, g.body.new_state])).toEqual([
      [null, 'error'],
      ['error', 'ok'],
    ]);
  }, LONG_TEST_MS);
});

describe('savedq check and broken alerts', () => {
  it('reports each broken alert file with its line, and alerts check still runs the others', async () => {
    const hook = await receiver();
    const flags = folder('broken', {
      'good.alert.yaml': alertFile(hook.url),
      'typo.alert.yaml': 'query: functions.invocation-stats\nparams: { project: a }\nwen: count > 0\nevery: 5m\nnotify:\n  - webhook: https://example.com/x\n',
      'no-column.alert.yaml': 'query: functions.invocation-stats\nparams: { project: a }\nwhen: error_cont > 0\nevery: 5m\nnotify:\n  - command: ["true"]\n',
      'escape.alert.yaml': "query: functions.invocation-stats\nparams: { project: a }\nwhen: error_count > (SELECT count() FROM system.tables)\nevery: 5m\nnotify:\n  - command: ['true']\n",
      'bad-param.alert.yaml': 'query: functions.invocation-stats\nparams: { project: a, interval: weekly }\nwhen: count > 0\nevery: 30s\nnotify:\n  - webhook: ftp://example.com/x\n',
      'bad-interval.alert.yaml': 'query: functions.invocation-stats\nparams: { interval: 1day, colour: red }\nwhen: count > 0\nevery: 5m\nnotify:\n  - command: ["true"]\n',
      'no-query.alert.yaml': 'query: no.such-query\nwhen: count > 0\nevery: 5m\nnotify:\n  - command: mail\n',
    });
    const checked = await cli([...flags, 'check']);
    expect(checked.code).toBe(2);
    const errors = checked.stdout.split('\n').filter((l) => l.startsWith('error')).sort();
    expect(errors).toEqual([
      expect.stringMatching(/^error {2}.*bad-interval\.alert\.yaml:2: .*colour/),
      expect.stringMatching(/^error {2}.*bad-param\.alert\.yaml:4: every must be at least 1m, not 30s\.$/),
      expect.stringMatching(/^error {2}.*bad-param\.alert\.yaml:6: webhook must be an http\(s\) address, not ftp\.$/),
      expect.stringMatching(/^error {2}.*escape\.alert\.yaml:3: when: refused: a subquery in a condition/),
      expect.stringMatching(/^error {2}.*no-column\.alert\.yaml:3: the engine refuses the condition over functions\.invocation-stats's answer: .*error_cont/),
      // Every problem of a file at once: its call's too (wen is read as the when it surely is).
      expect.stringMatching(/^error {2}.*no-query\.alert\.yaml:1: unknown query 'no\.such-query'\. Queries: /),
      expect.stringMatching(/^error {2}.*no-query\.alert\.yaml:5: command must be a list/),
      expect.stringMatching(/^error {2}.*typo\.alert\.yaml:3: unknown key 'wen' in the alert file\. Did you mean when\?$/),
    ]);
    expect(checked.stdout).toMatch(/^ok {5}good {2}.*good\.alert\.yaml$/m);
    // One rule: what check calls broken, alerts check reports as broken and never evaluates (no error state, nothing sent).
    const run = await cli([...flags, 'alerts', 'check', '--at', AT, '-f', 'json']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/warning: skipped .*typo\.alert\.yaml:3: unknown key 'wen'/);
    expect(run.stderr).toMatch(/warning: skipped .*no-column\.alert\.yaml:3: the engine refuses the condition over functions\.invocation-stats's answer: .*error_cont/);
    expect(run.stderr).toMatch(/warning: skipped .*escape\.alert\.yaml:3: when: refused: a subquery in a condition/);
    expect(run.stderr).toMatch(/warning: skipped .*bad-interval\.alert\.yaml:2: .*colour/);
    const report = JSON.parse(run.stdout) as { evaluated: { alert: string }[]; states: Record<string, string> };
    expect(report.evaluated.map((e) => e.alert)).toEqual(['good']);
    expect(report.states).toEqual({ good: 'firing' });
    expect(hook.got).toHaveLength(1);
    expect(run.stderr).not.toContain('error   ');
    const tested = await cli([...flags, 'alerts', 'test', 'no-column', '--at', AT]);
    expect(tested.code).toBe(2);
    expect(tested.stderr).toMatch(/^savedq: the alert no-column is broken: the engine refuses the condition over functions\.invocation-stats's answer: .*\(see savedq check\)\.\n$/);
  }, LONG_TEST_MS);

  it('reports an alert broken at once when its file breaks while it fires, before it is due again: in alerts check and alerts list', async () => {
    const hook = await receiver();
    const flags = folder('breaks-firing', { 'fn.alert.yaml': alertFile(hook.url) });
    const fired = await cli([...flags, 'alerts', 'check', '--at', AT]);
    expect([fired.code, fired.stderr]).toEqual([1, expect.stringMatching(/^firing {2}fn \(was new\)/)]);
    // Its condition misspelled a minute later (its every is 5m: not due), then a file that does not read.
    const file = join(dir, 'breaks-firing', 'fn.alert.yaml');
    for (const [broken, said] of [
      [alertFile(hook.url).replace('when: error_count > 0', 'when: error_cuont > 0'), /warning: skipped .*fn\.alert\.yaml:4: the engine refuses the condition over functions\.invocation-stats's answer: .*error_cuont/],
      [alertFile(hook.url).replace('when: error_count > 0', 'wen: error_count > 0'), /warning: skipped .*fn\.alert\.yaml:4: unknown key 'wen'/],
    ] as const) {
      writeFileSync(file, broken);
      const checked = await cli([...flags, 'alerts', 'check', '--at', atOffset(MINUTE)]);
      expect(checked.code, checked.stderr).toBe(1);
      expect(checked.stderr).toMatch(said);
      expect(checked.stderr).not.toMatch(/fn firing|[1-9] firing/);
      expect(checked.stderr).toMatch(/alerts not ok: 1 alert file broken/);
      const listed = await cli([...flags, 'alerts']);
      expect(listed.stderr).toMatch(said);
      expect(listed.stdout).not.toMatch(/firing/);
    }
    expect(hook.got).toHaveLength(1);
  }, LONG_TEST_MS);

  it('reads an alert file with every problem at its line', () => {
    const read = readAlertFile('/q/x.alert.yaml', 'query: q\nwhen: a > 1\nwhen_sql: SELECT 1\nevery: 5 minutes\nrepeat: 10s\nnotify: []\n');
    expect(read.problems?.map((p) => `${p.line}: ${p.message}`)).toEqual([
      '3: give when or when_sql, not both.',
      "4: every must be a duration such as 30s, 5m, 4h or 1d, not '5 minutes'.",
      '5: repeat must be at least 1m, not 10s.',
      '6: notify must be a list of where to send notifications (webhook: <url>, command: [program, args…]); an alert that tells no one is no alert.',
    ]);
    expect(readAlertFile('/q/Bad Name.alert.yaml', 'query: q\nwhen: 1\nevery: 1m\nnotify: [{command: [true]}]\n').problems?.[0]?.message).toMatch(/is not an alert name/);
    expect(readAlertFile('/q/ok.alert.yaml', 'query: q\nwhen: 1\nevery: 1m\nnotify: [{command: [true]}]\n').alert).toMatchObject({ name: 'ok', when: '1', everyMs: MINUTE, forMs: 0, notify: [{ command: ['true'] }] });
  });
});

describe('a condition is checked on the engine parse, as SQL sent to a query is', () => {
  const lib = testLibrary();
  beforeAll(async () => {
    await load(lib, 'function_edge_logs', []);
  });
  it.each([
    ['error_count > 0.05 * count', 'SELECT * FROM result WHERE error_count > (0.05 * count)'],
    ["lower(toString(timestamp)) LIKE '%2026%' AND count >= 1", "SELECT * FROM result WHERE (lower(toString(timestamp)) LIKE '%2026%') AND (count >= 1)"],
    ['arrayExists(x -> x > 2, [count, error_count])', 'SELECT * FROM result WHERE arrayExists(x -> (x > 2), [count, error_count])'],
  ])('takes %s', async (when, statement) => {
    expect(await lib.executor.checkCondition(when)).toBe(statement);
  });
  it.each([
    ['error_count > (SELECT count() FROM system.tables)', /a subquery in a condition/],
    ['count IN (SELECT 1)', /a subquery in a condition/],
    ['sum(count) > 0', /the aggregate sum in a condition/],
    ['countIf(error_count > 0) > 0', /the aggregate countIf/],
    ["file('/etc/passwd') != ''", /the function file/],
    ['count > 0 UNION ALL SELECT * FROM system.tables', /more than an expression over a row/],
    ['count > 0 ORDER BY count', /more than an expression over a row/],
    ['count > 0 SETTINGS readonly = 0', /more than an expression over a row/],
    ['count > 0 FORMAT JSON', /FORMAT/],
    ['count > 0; DROP TABLE function_edge_logs', /more than one statement/],
    ['count IN system.tables', /the table system.tables/],
    ['row_number() OVER () > 1', /the aggregate row_number in a condition/],
  ])('refuses %s', async (when, reason) => {
    const refused = await lib.executor.checkCondition(when).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(SandboxRefusedError);
    expect((refused as Error).message).toMatch(reason);
  });
});

describe('alerts test', () => {
  it('prints what it would send and sends nothing, changing nothing', async () => {
    const hook = await receiver();
    const flags = folder('dry', { 'dry.alert.yaml': alertFile(hook.url) });
    const tried = await cli([...flags, 'alerts', 'test', 'dry', '--at', AT]);
    expect(tried.code).toBe(0);
    expect(JSON.parse(tried.stdout)).toMatchObject({ alert: 'dry', old_state: null, new_state: 'firing', matched: 1 });
    expect(tried.stderr).toMatch(/dry: new -> firing \(1 row matched\); would send this to webhook http:\/\/127\.0\.0\.1:\d+\/…\. Nothing was sent\./);
    expect(hook.got).toHaveLength(0);
    // Never evaluated: null to tools, as a notification's old_state is; `new` in a table.
    expect((JSON.parse((await cli([...flags, 'alerts', '-f', 'json'])).stdout) as unknown[])[0]).toMatchObject({ state: null, evaluated: null });
    expect((await cli([...flags, 'alerts', '-f', 'table'])).stdout).toMatch(/│ dry +│ new +│/);
    // An --at that is no ISO 8601 instant is refused before anything is evaluated, as run refuses it.
    const badAt = await cli([...flags, 'alerts', 'check', '--at', 'Nov 3 2026']);
    expect(badAt).toMatchObject({ code: 2, stderr: 'savedq: invalid --at "Nov 3 2026": expected an ISO 8601 timestamp such as 2026-01-31T12:00:00Z.\n' });
    expect((JSON.parse((await cli([...flags, 'alerts', '-f', 'json'])).stdout) as unknown[])[0]).toMatchObject({ state: null, evaluated: null });
    const unknown = await cli([...flags, 'alerts', 'test', 'drx']);
    expect(unknown).toMatchObject({ code: 2, stdout: '', stderr: 'savedq: no alert named drx; there are dry.\n' });
  }, LONG_TEST_MS);
});

describe('one evaluation of an alert at a time', () => {
  it('leaves an alert another process is evaluating to it', async () => {
    const hook = await receiver();
    const started = join(dir, 'busy-started');
    const fifo = join(dir, 'busy-release');
    execFileSync('mkfifo', [fifo]);
    const holder = `  - command: [sh, -c, ': > "$0"; read x < "$1"; cat > /dev/null', ${started}, ${fifo}]\n`;
    const flags = folder('busy', { 'busy.alert.yaml': alertFile(hook.url, '', 'busy').replace('notify:\n', `notify:\n${holder}`) });
    const first = startCli([...flags, 'alerts', 'check', '--at', AT]);
    await eventually('the first check to be delivering', () => existsSync(started));
    const second = await cli([...flags, 'alerts', 'check', '--at', atOffset(10 * MINUTE), '--force']);
    expect(second.stderr).toContain('busy: being evaluated by another savedq process; left to it');
    expect(second.stderr).toContain('alerts: 0 evaluated');
    // Writing to the pipe lets the first one's command end.
    closeSync(openSync(fifo, 'w'));
    const done = await first.done;
    expect(done.code).toBe(1);
    expect(hook.got.map((g) => g.body.new_state)).toEqual(['firing']);
  }, LONG_TEST_MS);
});

describe('serve', () => {
  it('evaluates the alerts as it starts, logs what it notified, and tells Prometheus (the turns after: alerts-schedule.test.ts)', async () => {
    const hook = await receiver();
    const now = Date.now();
    await loadInvocations([invocation('served', new Date(now - 10 * MINUTE).toISOString(), 503)]);
    const flags = folder('served', { 'served.alert.yaml': alertFile(hook.url, '', 'served') });
    const serve = await startServe({ SAVEDQ_API_KEYS: 'k' }, flags, []);
    await eventually('the webhook to be called', () => hook.got.length > 0);
    expect(hook.got[0]?.body).toMatchObject({ alert: 'served', new_state: 'firing', matched: 1 });
    await serve.waitFor(/alert served: notified firing to webhook http:\/\/127\.0\.0\.1:\d+\/…/);
    expect(serve.stderr()).not.toContain('s3cr3t');
    // Its state and what it sent, for Prometheus.
    const metrics = await (await fetch(`${serve.url}/metrics`, { headers: { 'X-API-KEY': 'k' } })).text();
    expect(metrics).toContain('savedq_alert_state{alert="served",state="firing"} 1');
    expect(metrics).toContain('savedq_alert_state{alert="served",state="ok"} 0');
    expect(metrics).toContain('savedq_alert_notifications_total{alert="served",outcome="delivered"} 1');
    serve.child.kill('SIGTERM');
    await serve.exited;
  }, LONG_TEST_MS);
});
