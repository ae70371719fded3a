import { yaml } from '../queries/yaml-reading.js';
import type { ValueSpan } from './spec.js';

/** An expectation to put in place of another: rows, or a row count. */
export interface Rewrite {
  readonly span: ValueSpan;
  readonly value: readonly unknown[] | number;
}

/**
 * The test file's text with each expectation's value replaced, and nothing else changed: comments,
 * order, quoting and the other cases stay byte for byte, as only the values' own text is replaced.
 * Rows are written a row a line, as flow keys (`- { field: value, … }`), which YAML reads back as the
 * same JSON values.
 */
export function rewrite(text: string, rewrites: readonly Rewrite[]): string {
  let result = text;
  // From the end, so the offsets of those before stay right.
  for (const { span, value } of [...rewrites].sort((a, b) => b.span.start - a.span.start)) {
    let start = span.start;
    let replacement: string;
    if (typeof value === 'number') {
      replacement = String(value);
    } else if (value.length === 0) {
      replacement = '[]';
    } else if (span.onKeyLine) {
      // A flow list after the key becomes a block list below it.
      while (start > 0 && (result[start - 1] === ' ' || result[start - 1] === '\t')) start -= 1;
      const indent = ' '.repeat(span.keyColumn + 2);
      replacement = value.map((row) => `\n${indent}- ${flow(row)}`).join('');
    } else {
      const column = start - (result.lastIndexOf('\n', start - 1) + 1);
      replacement = value.map((row) => `- ${flow(row)}`).join(`\n${' '.repeat(column)}`);
    }
    result = result.slice(0, start) + replacement + result.slice(span.end);
  }
  return result;
}

/** A value as YAML on one line. */
function flow(value: unknown): string {
  return yaml().stringify(value, { collectionStyle: 'flow', lineWidth: 0 }).trimEnd();
}
