import { jsonText } from '../json.js';
import type { Row } from '../queries/types.js';
import type { ErrorKind, ExpectedRow, Rewritable, TestCase } from './spec.js';
import { plural } from '../words.js';

/** What a case's call gave: rows and the engine's count of rows read, or an error. */
export type CallOutcome =
  | { readonly rows: readonly Row[]; readonly rowsRead: number; readonly truncated: boolean; readonly error?: undefined }
  | { readonly rows?: undefined; readonly error: { readonly kind: ErrorKind | 'failure'; readonly message: string } };

/** One expectation a case did not meet. */
export interface Failure {
  /** Which expectation; `call` when the call failed and no error was expected. */
  readonly expectation: Rewritable | 'error' | 'max_rows_read' | 'truncated' | 'call';
  readonly message: string;
  /** The first row that differs (1-based) and its field, for rows. */
  readonly row?: number;
  readonly field?: string;
  /** Expected beside actual: the rows (or values) as they differ. */
  readonly expected?: unknown;
  readonly actual?: unknown;
}

/** Every expectation of a case the call did not meet; none when it passes. */
export function failures(test: TestCase, outcome: CallOutcome): Failure[] {
  if (outcome.error) {
    const { kind, message } = outcome.error;
    if (test.error === undefined) return [{ expectation: 'call', message: `the call failed (${kind === 'failure' ? 'the engine' : `${kind} error`}): ${message}` }];
    if (kind === test.error) return [];
    return [{ expectation: 'error', message: `expected ${article(test.error)} error, got ${kind === 'failure' ? 'a failure of the engine' : `${article(kind)} error`}: ${message}`, expected: test.error, actual: kind }];
  }
  const { rows, rowsRead, truncated } = outcome;
  const found: Failure[] = [];
  if (test.error !== undefined) {
    found.push({ expectation: 'error', message: `expected ${article(test.error)} error, but the call returned ${plural(rows.length, 'row')}`, expected: test.error, actual: 'rows' });
  }
  if (test.rows) found.push(...orderedDifference(test.rows, rows));
  if (test.rowsUnordered) found.push(...unorderedDifference(test.rowsUnordered, rows));
  if (test.rowCount !== undefined && rows.length !== test.rowCount) {
    found.push({ expectation: 'row_count', message: `expected ${plural(test.rowCount, 'row')}, got ${rows.length}`, expected: test.rowCount, actual: rows.length });
  }
  if (test.maxRowsRead !== undefined && !(rowsRead <= test.maxRowsRead)) {
    found.push({ expectation: 'max_rows_read', message: `the query read ${plural(rowsRead, 'row')}, more than max_rows_read ${test.maxRowsRead}`, expected: test.maxRowsRead, actual: rowsRead });
  }
  if (test.truncated !== undefined && truncated !== test.truncated) {
    found.push({ expectation: 'truncated', message: truncated ? 'the query had more rows than its max_rows, where truncated: false was expected' : 'the query had no more rows than its max_rows, where truncated: true was expected', expected: test.truncated, actual: truncated });
  }
  return found;
}

/** The first row and field where the rows differ from those expected, in order. */
function orderedDifference(expected: readonly ExpectedRow[], actual: readonly Row[]): Failure[] {
  const counts = `expected ${plural(expected.length, 'row')}, got ${actual.length}`;
  for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
    const want = expected[i];
    const got = actual[i];
    if (want === undefined) return [{ expectation: 'rows', message: `row ${i + 1} is not expected (${counts})`, row: i + 1, actual: got }];
    if (got === undefined) return [{ expectation: 'rows', message: `row ${i + 1} is missing (${counts})`, row: i + 1, expected: want }];
    const fields = [...new Set([...Object.keys(want), ...Object.keys(got)])];
    const field = fields.find((f) => !(f in want) || !(f in got) || canonical(want[f]) !== canonical(got[f]));
    if (field !== undefined) {
      const value = (row: Readonly<Record<string, unknown>>) => (field in row ? jsonText(row[field]) : 'no such field');
      return [{ expectation: 'rows', message: `row ${i + 1}, field ${field}: expected ${value(want)}, got ${value(got)}`, row: i + 1, field, expected: want, actual: got }];
    }
  }
  return [];
}

/** The rows expected but not returned, and those returned but not expected, in any order. */
function unorderedDifference(expected: readonly ExpectedRow[], actual: readonly Row[]): Failure[] {
  const unmatched = new Map<string, number>();
  for (const row of actual) unmatched.set(canonical(row), (unmatched.get(canonical(row)) ?? 0) + 1);
  const missing: ExpectedRow[] = [];
  for (const row of expected) {
    const left = unmatched.get(canonical(row)) ?? 0;
    if (left > 0) unmatched.set(canonical(row), left - 1);
    else missing.push(row);
  }
  const extra = actual.filter((row) => {
    const left = unmatched.get(canonical(row)) ?? 0;
    if (left === 0) return false;
    unmatched.set(canonical(row), left - 1);
    return true;
  });
  if (missing.length === 0 && extra.length === 0) return [];
  const parts = [missing.length > 0 ? `${plural(missing.length, 'expected row')} not returned` : '', extra.length > 0 ? `${plural(extra.length, 'row')} returned but not expected` : ''];
  return [{ expectation: 'rows_unordered', message: parts.filter((p) => p !== '').join(', '), expected: missing[0], actual: extra[0] }];
}

/** A value as JSON text with every object's keys in order: equal values, equal text. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return value === undefined ? 'null' : jsonText(value);
}

function article(kind: string): string {
  return /^[aeiou]/.test(kind) ? `an ${kind}` : `a ${kind}`;
}
