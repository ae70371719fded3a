import { Chalk } from 'chalk';
import { jsonText } from '../json.js';
import { wrapped } from '../output/wrap.js';
import type { Builder as JUnitReportBuilder } from 'junit-report-builder';
import { displayPath, problemText } from '../queries/catalog.js';
import type { Failure } from './expect.js';
import type { CaseResult, FileResult } from './runner.js';

/** How many cases passed, failed, were updated, and how many test files were broken. */
export interface Tally {
  readonly passed: number;
  readonly failed: number;
  readonly updated: number;
  readonly broken: number;
  readonly files: number;
}

/** Counts a run's outcomes. A case --update mended counts as updated, not passed. */
export function tally(results: readonly FileResult[]): Tally {
  const cases = results.flatMap((r) => r.cases);
  return {
    passed: cases.filter((c) => c.failures.length === 0 && c.updated.length === 0).length,
    failed: cases.filter((c) => c.failures.length > 0).length,
    updated: cases.filter((c) => c.failures.length === 0 && c.updated.length > 0).length,
    broken: results.filter((r) => r.problems.length > 0).length,
    files: results.length,
  };
}

/** The summary line: `12 passed, 1 failed, 1 broken file (7 files, 1.4 s)`. */
export function summaryText(t: Tally, ms: number): string {
  const parts = [`${t.passed} passed`];
  if (t.failed > 0) parts.push(`${t.failed} failed`);
  if (t.updated > 0) parts.push(`${t.updated} updated`);
  if (t.broken > 0) parts.push(`${t.broken} broken file${t.broken === 1 ? '' : 's'}`);
  return `${parts.join(', ')} (${t.files} file${t.files === 1 ? '' : 's'}, ${(ms / 1000).toFixed(1)} s)`;
}

/** A case as text: its line (`ok`, `FAIL` or `updated`, query, case, milliseconds), then what differs. */
export function caseText(result: CaseResult, query: string, color: boolean, width?: number): string {
  const chalk = new Chalk({ level: color ? 1 : 0 });
  const status =
    result.failures.length > 0 ? chalk.red('FAIL   ') : result.updated.length > 0 ? chalk.yellow('updated') : chalk.green('ok     ');
  // Wrapped at word breaks to a terminal's width, under the query's name.
  const lines = [wrapped(`${status}  ${query}  ${result.name}  ${chalk.dim(`${Math.round(result.ms)} ms`)}`, 0, 9, width)];
  for (const failure of result.failures) lines.push(...failureLines(failure).map((l) => `         ${l}`));
  for (const failure of result.updated) lines.push(chalk.dim(`         ${failure.expectation} rewritten: ${failure.message}`));
  return `${lines.join('\n')}\n`;
}

/** A broken test file as text: each problem, as `check` shows a definition's. */
export function brokenText(result: FileResult, color: boolean): string {
  const chalk = new Chalk({ level: color ? 1 : 0 });
  return result.problems.map((p) => `${chalk.red('error')}    ${problemText(p)}\n`).join('');
}

/** What a failure says, with the rows expected beside the rows returned. */
function failureLines(failure: Failure): string[] {
  const lines = [failure.message];
  if (failure.expectation === 'rows' || failure.expectation === 'rows_unordered') {
    if (failure.expected !== undefined) lines.push(`  expected: ${jsonText(failure.expected)}`);
    if (failure.actual !== undefined) lines.push(`  actual:   ${jsonText(failure.actual)}`);
  }
  return lines;
}

/** The run as JSON, for tools. */
export function jsonReport(results: readonly FileResult[], ms: number): string {
  const t = tally(results);
  const report = {
    ok: t.failed === 0 && t.broken === 0,
    passed: t.passed,
    failed: t.failed,
    updated: t.updated,
    broken: t.broken,
    ms: Math.round(ms),
    files: results.map((r) => ({
      file: r.file,
      query: r.query ?? null,
      problems: r.problems.map(({ file, line, message }) => ({ file, line, message })),
      cases: r.cases.map((c) => ({
        name: c.name,
        line: c.line,
        ok: c.failures.length === 0,
        ms: Math.round(c.ms * 10) / 10,
        rows: c.outcome.rows?.length ?? null,
        rows_read: c.outcome.rows ? c.outcome.rowsRead : null,
        error: c.outcome.error ?? null,
        failures: c.failures,
        updated: c.updated.map((u) => u.expectation),
      })),
    })),
  };
  return `${jsonText(report, 2)}\n`;
}

/**
 * The run as JUnit XML, which CI systems read: a test suite a test file, a test case a case; a broken
 * test file is a suite with one case in error.
 */
export async function junitReport(results: readonly FileResult[]): Promise<string> {
  // Loaded only for `-f junit` (left out of the CLI's bundle, see esbuild.config.mjs).
  // A CommonJS package whose module.exports is the builder (its types say `exports.default`).
  const builder = (await import('junit-report-builder')).default as unknown as JUnitReportBuilder;
  const junit = builder.newBuilder().name('savedq test');
  for (const result of results) {
    const file = displayPath(result.file);
    const suite = junit.testSuite().name(result.query ?? file);
    suite.property('file', file);
    if (result.problems.length > 0) {
      const [first] = result.problems;
      suite
        .testCase()
        .className(result.query ?? file)
        .name('test file')
        .file(file)
        .error(first ? problemText(first) : 'broken', 'broken', result.problems.map(problemText).join('\n'));
      continue;
    }
    for (const c of result.cases) {
      const testCase = suite.testCase().className(result.query ?? file).name(c.name).file(file).time(Math.round(c.ms) / 1000);
      if (c.failures.length > 0) {
        testCase.failure(c.failures.map((f) => f.message).join('; '), c.failures[0]?.expectation ?? 'failure').stacktrace(c.failures.flatMap(failureLines).join('\n'));
      }
    }
  }
  return junit.build();
}
