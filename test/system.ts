import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { postgresBin } from './postgres.mjs';

/**
 * What some tests need of the machine beyond Node and npm. A test that needs one of these runs only
 * where it is (`it.runIf(has.chromium)`); the suite's global setup names each one missing, with how
 * to get it, and under `SAVEDQ_TEST_ALL=1` (as `.ci/run` sets) a missing one fails the run instead, so
 * CI never skips quietly.
 */
export const NEEDS = {
  chromium: { what: "Debian's Chromium (/usr/bin/chromium), for the browser tests", install: 'apt-get install chromium', present: () => isExecutable('/usr/bin/chromium') },
  clickhouseServer: {
    what: "Debian's clickhouse-server (/usr/sbin/clickhouse-server), for the server-mode fault tests",
    install: 'apt-get install clickhouse-server',
    present: () => isExecutable('/usr/sbin/clickhouse-server'),
  },
  curl: { what: 'curl, as an HTTP client savedq did not write', install: 'apt-get install curl', present: () => onPath('curl') },
  postgres: {
    what: "Debian's PostgreSQL server (/usr/lib/postgresql/*/bin), for the shared store's tests",
    install: 'apt-get install postgresql',
    present: () => postgresBin() !== undefined && (process.getuid?.() !== 0 || onPath('setpriv')),
  },
  tutorialTools: {
    what: "jq and openssl, which the README's tutorial uses",
    install: 'apt-get install jq openssl',
    present: () => onPath('jq') && onPath('openssl'),
  },
  python3: { what: "Python 3, whose csv module reads savedq's CSV as a reader savedq did not write", install: 'apt-get install python3', present: () => onPath('python3') },
  ss: { what: 'ss, to see a client’s connections', install: 'apt-get install iproute2', present: () => onPath('ss') },
  prlimit: { what: 'prlimit, for an open-file limit', install: 'apt-get install util-linux', present: () => onPath('prlimit') },
  gnuTime: { what: "GNU time (/usr/bin/time), for a process's peak memory", install: 'apt-get install time', present: () => isExecutable('/usr/bin/time') },
  script: { what: 'script, for a real pseudo-terminal', install: 'apt-get install bsdutils', present: () => onPath('script') },
  root: {
    what: 'root with setpriv, to mount a small disk and to act as a second user of the machine',
    install: 'run the tests as root (as CI does)',
    present: () => process.getuid?.() === 0 && onPath('setpriv') && onPath('mount'),
  },
} as const;

export type Need = keyof typeof NEEDS;

/** Whether the machine has each need (checked once a test file). */
export const has: Readonly<Record<Need, boolean>> = Object.fromEntries(
  Object.entries(NEEDS).map(([name, need]) => [name, need.present()]),
) as Record<Need, boolean>;

/** The needs this machine lacks, one line each: what it is and how to get it. */
export function missingNeeds(): string[] {
  return (Object.keys(NEEDS) as Need[]).filter((n) => !has[n]).map((n) => `${NEEDS[n].what}: ${NEEDS[n].install}`);
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(program: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && isExecutable(join(dir, program)));
}

