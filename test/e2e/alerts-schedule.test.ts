import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startServer } from '../../src/http/server.js';
import { eventually, libraryOf, load, logInto, LONG_TEST_MS, MINUTE, serveOptions, tempDir } from '../helpers.js';

// serve's turns of the alerts (docs/alerts.md): each alert evaluated when its every: comes round, not
// at every turn; told by a clock the test moves, in a server of this process whose turns come often.

const dir = tempDir('savedq-alert-turns-');
const queries = join(dir, 'queries');
mkdirSync(queries);
/** Where each notification is written, a file each (named by the nanosecond it came). */
const sent = join(dir, 'sent');
mkdirSync(sent);
const t0 = Date.now();
let now = t0;
/** Each time the alerts ask the clock: a turn of them (nothing else asks in this file). */
let asked = 0;
const lib = libraryOf({ dataDir: join(dir, 'data'), cacheFile: join(dir, 'cache.sqlite'), queries: [queries] }, { clock: () => ((asked += 1), now) });

const notified = (): string[] =>
  readdirSync(sent)
    .filter((file) => !file.startsWith('.')) // one being written
    .sort()
    .map((file) => (JSON.parse(readFileSync(join(sent, file), 'utf8')) as { new_state: string }).new_state);

it("evaluates an alert at the first turn, not again before its every: has passed, and again at the first turn after", async () => {
  // One failed invocation two minutes before t0: in the five minutes before t0, not in those before t0 + 4 min.
  await load(lib, 'function_edge_logs', [
    { timestamp: new Date(t0 - 2 * MINUTE).toISOString(), event_message: 'POST | 503', metadata: { project_ref: 'turns', function_id: 'f1', execution_time_ms: 3, response: { status_code: 503 } } },
  ]);
  // A query of its own that is never cached (no cache:): each evaluation asks the engine.
  writeFileSync(
    join(queries, 'turns.errors.sql'),
    '/*\nparams:\n  project: { required: true }\n*/\nSELECT countIf(status_code >= 400) AS errors FROM function_edge_logs WHERE project = @project AND timestamp > @now - INTERVAL 5 MINUTE\n',
  );
  writeFileSync(
    join(queries, 'turns.alert.yaml'),
    `query: turns.errors\nparams: { project: turns }\nwhen: errors > 0\nevery: 5m\nnotify:\n  - command: [sh, -c, 'cat > "$0/.$$" && mv "$0/.$$" "$0/$(date +%s%N)"', ${sent}]\n`,
  );
  const server = await startServer(lib, serveOptions({ apiKeys: ['k'] }, { alertsEveryMs: 20, log: logInto() }));
  // The server, then the library it served (its engine still writes in the data directory until closed:
  // the folder's removal after it once failed with ENOTEMPTY in CI).
  afterAll(async () => {
    await server.close();
    await lib.close();
  });
  await eventually('the first turn to notify', () => notified().length === 1);
  expect(notified()).toEqual(['firing']);

  // Four minutes on, the error is out of the window, but the alert is not due: turns pass, nothing changes.
  now = t0 + 4 * MINUTE;
  const seen = asked;
  await eventually('five more turns', () => asked >= seen + 5);
  expect(notified()).toEqual(['firing']);

  // Its five minutes past, the next turn evaluates it: resolved.
  now = t0 + 5 * MINUTE + 1_000;
  await eventually('the turn after its every: to notify', () => notified().length === 2);
  expect(notified()).toEqual(['firing', 'ok']);
}, LONG_TEST_MS);
