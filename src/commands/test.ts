import { performance } from 'node:perf_hooks';
import { DefinitionError, InputError, TestsFailedError } from '../errors.js';
import type { Savedq } from '../library.js';
import { runTests } from '../admin.js';
import { TEST_FORMATS } from './choices.js';
import { colorOf, note, proseWidth, report, type CommonOptions, type Io } from './io.js';

/** Options of `savedq test`. */
export interface TestCommandOptions extends CommonOptions {
  /** Names or ids of the queries whose tests run; none = every test file of the queries folders. */
  readonly names: readonly string[];
  readonly builtin?: boolean | undefined;
  readonly update?: boolean | undefined;
  /** `text` (default), `json` or `junit`. */
  readonly format?: string | undefined;
  /** The warehouse the user configured, which the tests never use (noted when given). */
  readonly url?: string | readonly string[] | undefined;
}

/**
 * `savedq test`: runs saved queries' tests with no server and none of the user's data (docs/testing.md).
 * Text shows each case as it ends; json and junit print one document at the end. Exit 0 when every
 * case passes, 1 when any fails (TestsFailedError), 2 when a test file is broken (DefinitionError).
 */
export async function testCommand(lib: Savedq, options: TestCommandOptions, io: Io): Promise<void> {
  const format = options.format ?? 'text';
  if (!(TEST_FORMATS as readonly string[]).includes(format)) {
    throw new InputError(`invalid format ${JSON.stringify(format)}: one of ${TEST_FORMATS.join(', ')}.`);
  }
  if (options.url !== undefined || lib.config.urls.length > 0) note(io, options, 'tests run on the embedded engine, in a warehouse of their own; the server of --url is not used');
  const { caseText, brokenText, jsonReport, junitReport, summaryText, tally } = await import('../testing/report.js');
  const color = colorOf(io, options);
  const text = format === 'text';
  const started = performance.now();
  const results = await runTests(lib, {
    names: options.names,
    builtin: options.builtin === true,
    update: options.update === true,
    signal: options.signal,
    onCase: (result, _file, query) => {
      if (text) io.stdout.write(caseText(result, query, color, proseWidth(io)));
    },
    onFile: (result) => {
      if (text && result.problems.length > 0) io.stdout.write(brokenText(result, color));
    },
  });
  const ms = performance.now() - started;
  if (format === 'json') io.stdout.write(jsonReport(results, ms));
  if (format === 'junit') io.stdout.write(await junitReport(results));
  const counts = tally(results);
  const summary = `test: ${summaryText(counts, ms)}`;
  if (counts.broken > 0) throw new DefinitionError(`${summary}.`);
  if (counts.failed > 0) throw new TestsFailedError(`${summary}.`);
  report(io, options, summary);
}
