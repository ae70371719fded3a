import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { binPath, runProgram, tempDir, LONG_TEST_MS } from '../helpers.js';
import { has } from '../system.js';

// The README and docs/ as a newcomer reads them: every link goes somewhere, and the tutorial's
// commands do what it says, run as written with `savedq` on the PATH.
const root = fileURLToPath(new URL('../..', import.meta.url));
const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Markdown's lines outside fenced code blocks. */
function prose(text: string): string[] {
  let fenced = false;
  return text.split('\n').filter((line) => {
    if (line.startsWith('```')) fenced = !fenced;
    return !fenced && !line.startsWith('```');
  });
}

/** The anchors of a page's headings, as GitHub makes them (a repeated heading gets -1, -2, …). */
function anchorsOf(page: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of prose(readFileSync(join(root, page), 'utf8'))) {
    const heading = /^#{1,6} (.*)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading.replace(/`/g, '').trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

describe('the README and docs/', () => {
  it('link only to files that exist and to headings that exist', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const line of prose(readFileSync(join(root, page), 'utf8'))) {
        for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
          if (target === undefined || /^[a-z]+:/.test(target)) continue;
          const [path = '', anchor] = target.split('#');
          const file = path === '' ? join(root, page) : resolve(dirname(join(root, page)), path);
          if (!existsSync(file)) broken.push(`${page}: ${target} (no such file)`);
          else if (anchor !== undefined && !anchorsOf(file.slice(root.length)).has(anchor)) broken.push(`${page}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('start with a quick start of exactly two command lines, and stay a read of about 600 lines', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const quick = /^## .*quick start.*\n\n(?:<!-- .* -->\n)?```sh\n([\s\S]*?)```/im.exec(readme)?.[1] ?? '';
    expect(quick.trim().split('\n')).toHaveLength(2);
    expect(quick).toMatch(/^npm install && npx savedq load --sample && npx savedq run /);
    expect(quick.trim().split('\n')[1]).toBe('npm test');
    expect(readme.split('\n').length).toBeLessThanOrEqual(650);
  });
});

/** A fenced block of the README at its top level, with the readme-test note above it, if any. */
interface Block {
  readonly line: number;
  readonly lang: string;
  readonly body: string;
  /** `run`, `file <path>`, `cron`, `skip: <why>`; none: a block of sh or console is run. */
  readonly note: string | undefined;
}

function blocksOf(readme: string): Block[] {
  const lines = readme.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)$/.exec(lines[i] ?? '');
    if (!open) continue;
    const end = lines.indexOf('```', i + 1);
    const note = /^<!-- readme-test: (.*) -->$/.exec(lines[i - 1] ?? '')?.[1];
    blocks.push({ line: i + 1, lang: open[1] ?? '', body: lines.slice(i + 1, end).join('\n'), note });
    i = end;
  }
  return blocks;
}

/** One step of the tutorial: a file to write, or a command of the shell session and what it should do. */
type Step =
  | { kind: 'file'; path: string; text: string }
  | { kind: 'run'; command: string; shown: string[]; line: number }
  | { kind: 'sh'; command: string; line: number }
  | { kind: 'cron'; command: string; env: string[]; line: number };

/** An sh block's commands: a line each, `\` joining lines, comments and blank lines left out. */
function shellCommands(body: string): string[] {
  return body
    .replace(/\\\n/g, '')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
}

/** Every block of the README as the tutorial's steps, in order; a block no step can be made of is a failure, named. */
function tutorialSteps(readme: string): { steps: Step[]; unmarked: string[] } {
  const steps: Step[] = [];
  const unmarked: string[] = [];
  const crontab: string[] = [];
  for (const block of blocksOf(readme)) {
    const note = block.note ?? (block.lang === 'sh' ? 'sh' : block.lang === 'console' ? 'run' : undefined);
    if (note === undefined) unmarked.push(`README.md:${block.line}: a ${block.lang || 'plain'} block with no readme-test note (run, file, cron or skip: why)`);
    else if (note.startsWith('skip')) {
      if (!/^skip: \S/.test(note)) unmarked.push(`README.md:${block.line}: a skip says why`);
    } else if (note.startsWith('file ')) steps.push({ kind: 'file', path: note.slice(5), text: `${block.body}\n` });
    else if (note === 'run') {
      for (const chunk of block.body.split(/^\$ /m).slice(1)) {
        const [command = '', ...shown] = chunk.trimEnd().split('\n');
        steps.push({ kind: 'run', command, shown, line: block.line });
      }
    } else if (note === 'sh') for (const command of shellCommands(block.body)) steps.push({ kind: 'sh', command, line: block.line });
    else if (note === 'cron') {
      // One crontab: its variables hold for the lines below them, in later blocks too.
      for (const line of shellCommands(block.body)) {
        if (/^[A-Z_]+=/.test(line)) crontab.push(line);
        else steps.push({ kind: 'cron', command: line.split(/\s+/).slice(5).join(' ').replace(/\s+#.*$/, ''), env: [...crontab], line: block.line });
      }
    } else unmarked.push(`README.md:${block.line}: an unknown readme-test note ${JSON.stringify(note)}`);
  }
  return { steps, unmarked };
}

/** Text in single quotes, for a shell. */
const quoted = (text: string) => `'${text.replace(/'/g, "'\\''")}'`;

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("the README's tutorial", () => {
  it('has a readme-test note on every block that is not run as it stands', () => {
    expect(tutorialSteps(readFileSync(join(root, 'README.md'), 'utf8')).unmarked).toEqual([]);
  });

  it.runIf(has.curl && has.tutorialTools)('runs every block in order in one shell session, serve in the background included, and the crontab lines under env -i', async () => {
    const dir = tempDir();
    const home = join(dir, 'home');
    const bin = join(dir, 'bin');
    const work = join(dir, 'work');
    const out = join(dir, 'out');
    for (const d of [home, bin, work, out]) mkdirSync(d, { recursive: true });
    // `savedq` on the PATH, as `npm link` makes it: the built CLI of this checkout.
    const savedq = join(bin, 'savedq');
    writeFileSync(savedq, `#!/bin/sh\nexec '${process.execPath}' '${binPath}' "$@"\n`);
    chmodSync(savedq, 0o755);
    const { steps } = tutorialSteps(readFileSync(join(root, 'README.md'), 'utf8'));
    expect(steps.filter((s) => s.kind !== 'file').length).toBeGreaterThanOrEqual(20);
    // The README's port is 4000; the session's, one free now. Its home is /home/you; the session's, a folder of its own.
    const port = await freePort();
    const local = (text: string) => text.replace(/\b4000\b/g, String(port)).replace(/\/home\/you/g, home).replace(/\/usr\/local\/bin\/savedq/g, savedq);
    const health = `http://127.0.0.1:${port}/health`;
    const script = [
      'trap \'kill $(jobs -p) 2>/dev/null\' EXIT',
      // The quick start's load, which the tutorial starts from.
      `savedq load --sample > ${quoted(join(out, 'sample'))} 2>&1 || exit 1`,
    ];
    for (const [i, step] of steps.entries()) {
      if (step.kind === 'file') {
        const file = step.path.replace(/^~/, home);
        script.push(`mkdir -p ${quoted(dirname(file))} && printf '%s' ${quoted(step.text)} > ${quoted(file)}`);
        continue;
      }
      const command = local(step.command);
      const reloads = /\bkill -HUP\b/.test(command);
      if (reloads) script.push(`before=$(curl -s http://127.0.0.1:${port}/openapi.json | cksum)`);
      const line =
        step.kind === 'cron'
          ? `env -i ${step.env.map((v) => quoted(local(v))).join(' ')} /bin/sh -c ${quoted(command)}`
          : command;
      script.push(`{ ${line}\n} > ${quoted(join(out, String(i)))} 2>&1 < /dev/null; echo $? > ${quoted(join(out, `${i}.code`))}`);
      // What a person waits for without thinking: a serve started in the background to listen, one told to read its folders to have read them.
      if (/\bsavedq serve\b.*&/.test(command)) script.push(`for t in $(seq 600); do curl -s -o /dev/null ${health} && break; sleep 0.1; done`);
      if (reloads) script.push(`for t in $(seq 600); do [ "$(curl -s http://127.0.0.1:${port}/openapi.json | cksum)" != "$before" ] && break; sleep 0.1; done`);
    }
    const env = { PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: home, LANG: 'C.UTF-8' };
    const session = await runProgram('bash', ['-c', script.join('\n')], { env, cwd: work, timeoutMs: LONG_TEST_MS });
    expect(session.code, `${session.stderr}\n${readIfThere(join(out, 'sample'))}`).toBe(0);

    for (const [i, step] of steps.entries()) {
      if (step.kind === 'file') continue;
      const said = readIfThere(join(out, String(i))).replace(new RegExp(home, 'g'), '~');
      const code = Number(readIfThere(join(out, `${i}.code`)));
      const where = `README.md:${step.line}: ${step.command}\n${said}`;
      if (step.kind === 'run') {
        // A command the README shows refused is refused; the others succeed.
        const refused = step.shown.some((line) => line.startsWith('savedq: '));
        expect(code === 0, where).toBe(!refused);
        // Every line it shows that holds no figure (figures follow the sample's draw) is what it printed.
        for (const line of step.shown.filter((l) => !/\d/.test(l) || /^savedq: |^ok |^check: /.test(l))) {
          // A line wrapped to 80 columns is one line of standard error in a file; /home/you is the session's home, said as ~.
          const shown = line.replace(/ \d+ ms$/, '').replace(/ \(1 file, [\d.]+ s\)$/, '').replace(/\/home\/you/g, '~').trim();
          expect(said, `${where}: ${line}`).toContain(shown);
        }
      } else if (step.kind === 'sh') {
        expect(code, where).toBe(0);
        // No answer of serve's is an error (a curl prints one and exits 0).
        expect(said, where).not.toMatch(/\{"error":/);
      } else {
        // A cron line prints nothing (cron would mail it): no folder guessed, no alert file unseen. alerts
        // check exits 1 while an alert fires, as the README says.
        expect(said, where).toBe('');
        expect(code === 0 || (code === 1 && /alerts check/.test(step.command)), where).toBe(true);
      }
    }
    // The alert's command appended one line of JSON, as the README says.
    const notified = readFileSync(join(home, 'alerts.ndjson'), 'utf8').split('\n').filter((l) => l !== '');
    expect(notified.map((l) => (JSON.parse(l) as { new_state: string }).new_state)).toEqual(['firing']);
  }, LONG_TEST_MS);
});

describe('the paging recipe of docs/queries.md', () => {
  it.runIf(has.tutorialTools)('prints every entry once, newest first, when entries of one instant straddle a page', async () => {
    const dir = tempDir();
    const text = readFileSync(join(root, 'docs/queries.md'), 'utf8');
    const script = /<!-- page-logs\.sh: .* -->\n```sh\n([\s\S]*?)```/.exec(text)?.[1];
    expect(script).toBeDefined();
    writeFileSync(join(dir, 'page-logs.sh'), script as string);
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'savedq'), `#!/bin/sh\nexec '${process.execPath}' '${binPath}' "$@"\n`);
    chmodSync(join(bin, 'savedq'), 0o755);
    // 250 entries a second apart, but for five of one instant, the 98th to the 102nd newest: the first
    // page of 100 ends among them, and the second (which ends at that instant) starts with all five.
    const now = Date.now();
    const at = (seconds: number) => new Date(now - 3_600_000 + seconds * 1000).toISOString();
    const events = Array.from({ length: 250 }, (_, i) => {
      const second = i >= 97 && i <= 101 ? 98 : i;
      return JSON.stringify({ id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, timestamp: at(250 - second), project: 'paged', event_message: `e${i}` });
    });
    writeFileSync(join(dir, 'events.ndjson'), `${events.join('\n')}\n`);
    const env = { PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: dir, SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'c.sqlite'), XDG_CONFIG_HOME: join(dir, 'none') };
    const loaded = await runProgram('savedq', ['load', 'edge_logs', join(dir, 'events.ndjson')], { env, timeoutMs: LONG_TEST_MS });
    expect(loaded.code, loaded.stderr).toBe(0);
    const paged = await runProgram('sh', [join(dir, 'page-logs.sh'), 'paged', at(-1)], { env, timeoutMs: LONG_TEST_MS });
    expect(paged.code, paged.stderr).toBe(0);
    const read = paged.stdout.trim().split('\n').map((line) => JSON.parse(line) as { id: string; timestamp: string });
    expect(read).toHaveLength(250);
    expect(new Set(read.map((r) => r.id)).size).toBe(250);
    // Newest first.
    expect(read.map((r) => r.timestamp)).toEqual([...read.map((r) => r.timestamp)].sort().reverse());
  }, LONG_TEST_MS);
});

function readIfThere(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}
