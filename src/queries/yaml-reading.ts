import type { Node, Pair, Scalar, YAMLError, YAMLMap, YAMLSeq } from 'yaml';
import { lazyRequire } from '../lazy.js';
import { closest } from '../suggest.js';

// Reading YAML written by people (a saved query's header, a test file): every problem at its line.

/** The YAML parser: loaded when a header or a test file is first read (a cache hit reads none). */
export const yaml = lazyRequire<typeof import('yaml')>('yaml', 'yaml.cjs');
export const isMap = (node: unknown): node is YAMLMap => yaml().isMap(node);
export const isSeq = (node: unknown): node is YAMLSeq => yaml().isSeq(node);
export const isScalar = (node: unknown): node is Scalar => yaml().isScalar(node);

/** Thrown inside a reader at the first problem of a part of a file (a definition's header, a test file). */
export class Problem extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

/** Where a node starts: the line of its first character. */
export type LineOf = (node: Node | null | undefined) => number;

/** The entries of a YAML mapping, each with the line of its key. */
export function mapEntries(node: Node | null, line: number, what: string, at: LineOf): [Pair<Node, Node | null>, number][] {
  if (isNull(node)) return [];
  if (!isMap(node)) throw new Problem(line, `${what} must be YAML keys, not ${describeNode(node)}.`);
  return ((node as YAMLMap<Node, Node | null>).items).map((pair) => [pair, at(pair.key)]);
}

/** How each key of a mapping is read: its value, the line of its value, and the pair (for the key's own line or span). */
export type KeyReaders = Readonly<Record<string, (value: Node | null, line: number, pair: Pair<Node, Node | null>) => void>>;

/**
 * Reads a mapping written by people (a header, an alert file, a test file, a case) by the table of its
 * keys, the one way each reader walks its keys: a key's Problem is told to `problem` at its line and
 * the other keys are read on; a key misspelled is said, then read as the key it surely is (when the
 * mapping gives none of that one), so that what is wrong inside it is said at once too, not on the
 * next try. Returns how many problems it told.
 */
export function readKeys(
  entries: readonly [Pair<Node, Node | null>, number][],
  readers: KeyReaders,
  where: string,
  at: LineOf,
  problem: (line: number, message: string) => void,
): number {
  let told = 0;
  const tell = (line: number, message: string) => {
    told += 1;
    problem(line, message);
  };
  const known = Object.keys(readers);
  const given = new Set(entries.map(([pair]) => (isScalar(pair.key) ? String(pair.key.value) : '')));
  for (const [pair, keyLine] of entries) {
    try {
      const key = keyName(pair, keyLine, 'key');
      const meant = Object.hasOwn(readers, key) ? key : closest(key, known);
      if (meant !== key) tell(keyLine, unknownKey(key, known, where, keyLine).message);
      if (meant === undefined || (meant !== key && given.has(meant))) continue;
      (readers[meant] as KeyReaders[string])(pair.value, pair.value ? at(pair.value) : keyLine, pair);
    } catch (err) {
      if (!(err instanceof Problem)) throw err;
      tell(err.line, err.message);
    }
  }
  return told;
}

export function keyName(pair: Pair<Node, Node | null>, line: number, what: string): string {
  const key = pair.key;
  if (!isScalar(key) || (typeof key.value !== 'string' && typeof key.value !== 'number' && typeof key.value !== 'bigint')) {
    throw new Problem(line, `a ${what} must be plain text.`);
  }
  return String(key.value);
}

export function unknownKey(key: string, known: readonly string[], where: string, line: number, what = 'key'): Problem {
  const guess = closest(key, known);
  return new Problem(line, `unknown ${what} '${key}' in ${where}.${guess ? ` Did you mean ${guess}?` : ` Known: ${known.join(', ')}.`}`);
}

export function isNull(node: Node | null | undefined): boolean {
  return node === null || node === undefined || (isScalar(node) && node.value === null);
}

export function scalarValue(node: Node | null): unknown {
  return isScalar(node) ? node.value : undefined;
}

export function describeNode(node: Node | null): string {
  if (isMap(node)) return 'keys';
  if (isSeq(node)) return 'a list';
  const value = scalarValue(node);
  return value === null || value === undefined ? 'nothing' : (typeof value === 'string' ? 'text' : typeof value === 'bigint' ? 'a number' : `a ${typeof value}`);
}

/** A text setting. */
export function text_(node: Node | null, line: number, what: string): string {
  const value = scalarValue(node);
  if (typeof value !== 'string') throw new Problem(line, `${what} must be text, not ${describeNode(node)}.`);
  return value;
}

export function flag(node: Node | null, line: number, what: string): boolean {
  const value = scalarValue(node);
  if (typeof value !== 'boolean') throw new Problem(line, `${what} must be true or false, not ${describeNode(node)}.`);
  return value;
}

export function wholeNumber(node: Node | null, line: number, what: string, min: number, max: number): number {
  const value = scalarValue(node);
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw new Problem(line, `${what} must be a whole number from ${min} to ${max}, not ${describeNode(node) === 'a number' ? String(value) : describeNode(node)}.`);
  }
  return n;
}

/** A scalar as the text a user would have typed for it; a list (for string[]) as comma-separated text. */
export function valueText(node: Node | null, line: number, what: string, list: boolean): string {
  if (list && isSeq(node)) {
    return (node.items as Node[]).map((item) => valueText(item, line, what, false)).join(',');
  }
  const value = scalarValue(node);
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new Problem(line, `${what} must be a single value, not ${describeNode(node)}.`);
}

/** The YAML library's message without its position (the line is given separately). */
export function yamlMessage(message: string): string {
  return (message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '').replace(/\.?$/, '.');
}

/** Line numbers of offsets in a text. */
export class LineIndex {
  readonly #starts: number[] = [0];

  constructor(text: string) {
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.#starts.push(i + 1);
  }

  /** The 1-based line of an offset. */
  lineAt(offset: number): number {
    let lo = 0;
    let hi = this.#starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.#starts[mid] as number) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }
}

/**
 * A file of YAML keys written by people (a test file, an alert file): its mapping, and where any node
 * of it starts; or its first problem, at its line (a YAML error, or a file that is not keys).
 */
export function yamlKeysOf(text: string, what: string, keys: readonly string[]): { root: YAMLMap<Node, Node | null>; at: LineOf } | { line: number; message: string } {
  const lines = new LineIndex(text);
  const doc = yaml().parseDocument(text, { prettyErrors: false, intAsBigInt: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const [err] = doc.errors as [YAMLError, ...YAMLError[]];
    return { line: lines.lineAt(Math.min(err.pos[0], Math.max(0, text.trimEnd().length - 1))), message: `not valid YAML: ${yamlMessage(err.message)}` };
  }
  const at: LineOf = (node) => lines.lineAt(node?.range?.[0] ?? 0);
  const root = doc.contents;
  if (!isMap(root)) return { line: root ? at(root) : 1, message: `${what} is YAML keys (${keys.join(', ')}), not ${describeNode(root)}.` };
  return { root: root, at };
}
