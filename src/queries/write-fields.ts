import type { Node, Pair, YAMLMap } from 'yaml';
import { fieldTypeOf, type EngineColumn } from './shape.js';
import type { FieldDefinition } from './types.js';
import { isMap, keyName, yaml } from './yaml-reading.js';

/**
 * A definition file's text with its `fields:` written from the engine's columns (`check --write-fields`):
 * a field a column in the answer's order, each of its type (the declared one where the column keeps
 * it, else the engine's, by shape.ts's table) with the description already written; a field the answer
 * has not goes. A field unchanged keeps its own text; the rest of the file is left as it is. Undefined
 * when the fields already say what the answer is (the file need not be written).
 */
export function withFieldsWritten(text: string, columns: readonly EngineColumn[], declared: readonly FieldDefinition[]): string | undefined {
  const Y = yaml();
  const wanted = columns.map((column) => {
    const field = declared.find((f) => f.name === column.name);
    return { name: column.name, type: fieldTypeOf(column, field?.type), description: field?.description ?? '', field };
  });
  if (wanted.length === declared.length && wanted.every((w, i) => w.field === declared[i] && w.type === w.field?.type)) return undefined;

  // One field as the built-ins write it: `name: { type: …, description: … }`.
  const entry = (name: string, type: string, description: string): string => {
    const doc = new Y.Document({ [name]: description === '' ? { type } : { type, description } });
    const [pair] = (doc.contents as YAMLMap<unknown, YAMLMap>).items;
    if (pair?.value) pair.value.flow = true;
    return doc.toString({ lineWidth: 0 }).trimEnd();
  };

  const start = /^\uFEFF?\s*/.exec(text)?.[0].length ?? 0;
  if (!text.startsWith('/*', start)) {
    return `${text.slice(0, start)}/*\nfields:\n${wanted.map((w) => `  ${entry(w.name, w.type, w.description)}`).join('\n')}\n*/\n${text.slice(start)}`;
  }
  const headerStart = start + 2;
  const headerEnd = text.indexOf('*/', headerStart);
  const header = text.slice(headerStart, headerEnd);
  const doc = Y.parseDocument(header, { intAsBigInt: true });
  const root = doc.contents;
  const pairs = isMap(root) ? (root.items as Pair<Node, Node | null>[]) : [];
  const fieldsPair = pairs.find((p) => Y.isScalar(p.key) && p.key.value === 'fields');
  // Each field already written, by name: its own text, kept when it stays as it is.
  const written = new Map<string, string>();
  const fieldsMap = fieldsPair?.value;
  if (isMap(fieldsMap) && !fieldsMap.flow) {
    for (const pair of fieldsMap.items as Pair<Node, Node | null>[]) {
      const from = pair.key?.range?.[0];
      const to = (pair.value ?? pair.key)?.range?.[1];
      if (from !== undefined && to !== undefined) written.set(keyName(pair, 0, 'field name'), header.slice(from, to).trimEnd());
    }
  }
  const indent = fieldsPair?.key?.range ? ' '.repeat(header.slice(0, fieldsPair.key.range[0]).length - header.lastIndexOf('\n', fieldsPair.key.range[0] - 1) - 1) : '';
  const lines = wanted.map((w) => `${indent}  ${w.field !== undefined && w.type === w.field.type && written.has(w.name) ? written.get(w.name) : entry(w.name, w.type, w.description)}`);
  const block = `fields:\n${lines.join('\n')}`;
  const keyRange = fieldsPair?.key?.range;
  if (fieldsPair === undefined || !keyRange) {
    // No fields yet: after the header's last key.
    const body = header.trimEnd();
    return `${text.slice(0, headerStart)}${body}\n${block}${header.slice(body.length)}${text.slice(headerEnd)}`;
  }
  const from = keyRange[0];
  const to = (fieldsPair.value ?? fieldsPair.key).range?.[1] ?? from;
  const kept = header.slice(from, to);
  const end = from + kept.trimEnd().length;
  return `${text.slice(0, headerStart)}${header.slice(0, from)}${block}${header.slice(end)}${text.slice(headerEnd)}`;
}
