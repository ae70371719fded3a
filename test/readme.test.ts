import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { binPath, tempDir, LONG_TEST_MS } from './helpers.js';

// The README and docs/ as a newcomer reads them: every link goes somewhere, and the tutorial's
// commands do what it says, run as written with `savedq` on the PATH.
const root = fileURLToPath(new URL('..', import.meta.url));
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
    const quick = /^## .*quick start.*\n\n```sh\n([\s\S]*?)```/im.exec(readme)?.[1] ?? '';
    expect(quick.trim().split('\n')).toHaveLength(2);
    expect(quick).toMatch(/^npm install && npx savedq load --sample && npx savedq run /);
    expect(quick.trim().split('\n')[1]).toBe('npm test');
    expect(readme.split('\n').length).toBeLessThanOrEqual(650);
  });
});

/** The tutorial's steps, in order: files to write and commands to run, each with what the README shows it printing. */
type Step = { kind: 'file'; path: string; text: string } | { kind: 'run'; command: string; shown: string[] };

function tutorialSteps(readme: string): Step[] {
  const steps: Step[] = [];
  for (const [, what, arg, body = ''] of readme.matchAll(/<!-- readme-test: (run|file)(?: (\S+))? -->\n```\w*\n([\s\S]*?)```/g)) {
    if (what === 'file') {
      steps.push({ kind: 'file', path: arg ?? '', text: body });
      continue;
    }
    for (const chunk of body.split(/^\$ /m).slice(1)) {
      const [command = '', ...shown] = chunk.trimEnd().split('\n');
      steps.push({ kind: 'run', command, shown });
    }
  }
  return steps;
}

describe("the README's tutorial", () => {
  it('runs as written, from the sample to a query of your own, its check, its runs and its test', () => {
    const dir = tempDir();
    const home = join(dir, 'home');
    const bin = join(dir, 'bin');
    const work = join(dir, 'work');
    for (const d of [home, bin, work]) mkdirSync(d, { recursive: true });
    // `savedq` on the PATH, as `npm link` makes it: the built CLI of this checkout.
    writeFileSync(join(bin, 'savedq'), `#!/bin/sh\nexec '${process.execPath}' '${binPath}' "$@"\n`);
    chmodSync(join(bin, 'savedq'), 0o755);
    const env = { PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: home, LANG: 'C.UTF-8' };
    const sh = (command: string) => spawnSync('sh', ['-c', command], { cwd: work, env, encoding: 'utf8', timeout: LONG_TEST_MS });

    const loaded = sh('savedq load --sample');
    expect(loaded.status, loaded.stderr).toBe(0);
    const steps = tutorialSteps(readFileSync(join(root, 'README.md'), 'utf8'));
    expect(steps.filter((s) => s.kind === 'run').length).toBeGreaterThanOrEqual(5);
    for (const step of steps) {
      if (step.kind === 'file') {
        writeFileSync(step.path.replace(/^~/, home), step.text);
        continue;
      }
      const r = sh(step.command);
      const said = `${r.stdout}${r.stderr}`;
      // A command the README shows refused is refused; the others succeed.
      const refused = step.shown.some((line) => line.startsWith('savedq: '));
      expect(r.status === 0, `${step.command}\n${said}`).toBe(!refused);
      // Every line it shows that holds no figure (figures follow the sample's draw) is what it printed.
      for (const line of step.shown.filter((l) => !/\d/.test(l) || /^savedq: |^ok |^check: /.test(l))) {
        expect(said.replace(new RegExp(home, 'g'), '~'), `${step.command}: ${line}`).toContain(line.replace(/ \d+ ms$/, '').replace(/ \(1 file, [\d.]+ s\)$/, ''));
      }
    }
  }, LONG_TEST_MS);
});
