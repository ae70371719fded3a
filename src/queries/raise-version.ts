import type { Node, Pair } from 'yaml';
import { isMap, yaml } from './yaml-reading.js';

/**
 * A definition file's text with its header's `version:` set to `version` (`savedq version`): the value
 * replaced where the header has the key, else a line `version: N` after its id (or name), else first in
 * the header; a file without a header gets one. The rest of the file is left as it is.
 */
export function withVersion(text: string, version: number): string {
  const start = /^\uFEFF?\s*/.exec(text)?.[0].length ?? 0;
  if (!text.startsWith('/*', start)) return `${text.slice(0, start)}/*\nversion: ${version}\n*/\n${text.slice(start)}`;
  const headerStart = start + 2;
  const headerEnd = text.indexOf('*/', headerStart);
  const header = text.slice(headerStart, headerEnd);
  const Y = yaml();
  const root = Y.parseDocument(header, { intAsBigInt: true }).contents;
  const pairs = isMap(root) ? (root.items as Pair<Node, Node | null>[]) : [];
  const pairOf = (key: string) => pairs.find((p) => Y.isScalar(p.key) && p.key.value === key);
  const at = (offset: number) => text.slice(0, headerStart + offset);
  const rest = (offset: number) => text.slice(headerStart + offset);
  const value = pairOf('version')?.value?.range;
  if (value) return `${at(value[0])}${version}${rest(value[1])}`;
  const after = pairOf('id') ?? pairOf('name');
  const end = (after?.value ?? after?.key)?.range?.[1];
  if (after?.key?.range && end !== undefined) {
    // On the line after that key's value, at its indentation.
    const lineStart = header.lastIndexOf('\n', after.key.range[0] - 1) + 1;
    const indent = header.slice(lineStart, after.key.range[0]);
    const newline = header.indexOf('\n', end - 1);
    const cut = newline < 0 ? header.length : newline;
    return `${at(cut)}\n${indent}version: ${version}${rest(cut)}`;
  }
  const first = header.search(/\S/);
  if (first < 0) return `${at(0)}\nversion: ${version}\n${rest(header.length)}`;
  const lineStart = header.lastIndexOf('\n', first - 1) + 1;
  return `${at(lineStart)}${header.slice(lineStart, first)}version: ${version}\n${rest(lineStart)}`;
}
