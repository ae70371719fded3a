import { closest } from '../suggest.js';
import type { DefinitionProblem } from './definition.js';
import type { FieldType, SavedQuery } from './types.js';

// A saved query's answer as its fields promise it (docs/queries.md, "Fields are a contract"): the
// engine describes the bound statement's columns without running it, and each is held against the
// field of its name. One table maps the engine's types to savedq's field types, for the check and for
// `check --write-fields`.

/** A column of a query's answer as the engine describes it: its name and its type in the engine's words. */
export interface EngineColumn {
  readonly name: string;
  readonly type: string;
}

/** The columns the engine has described of a query's answer, when it has (the OpenAPI document's and MCP's schemas allow null where a column may be null). */
export type ShapeOf = (query: SavedQuery) => readonly EngineColumn[] | undefined;

/** A column's type in savedq's words: the field type it answers as (undefined: any, as `Nothing` or `Dynamic`), and whether it may be null. */
export interface ColumnShape {
  readonly type: FieldType | undefined;
  readonly nullable: boolean;
}

/** The engine's type families, by the field type each answers as. */
const FAMILIES: readonly (readonly [RegExp, FieldType])[] = [
  [/^U?Int(8|16|32|64|128|256)$/, 'integer'],
  [/^(BFloat16|Float32|Float64|Decimal(32|64|128|256)?)$/, 'number'],
  [/^Bool$/, 'boolean'],
  [/^DateTime(64)?$/, 'timestamp'],
  [/^Date(32)?$/, 'date'],
  [/^(String|FixedString|UUID|Enum(8|16)?|IPv4|IPv6)$/, 'string'],
  [/^(Map|Tuple|JSON|Object)$/, 'object'],
  [/^Array$/, 'array'],
];

/** The field type a column of this engine type answers as: Nullable(T) as T, null allowed; LowCardinality(T) as T. */
export function columnShape(engineType: string): ColumnShape {
  let type = engineType.trim();
  let nullable = false;
  for (let m = /^(Nullable|LowCardinality)\((.*)\)$/s.exec(type); m; m = /^(Nullable|LowCardinality)\((.*)\)$/s.exec(type)) {
    if (m[1] === 'Nullable') nullable = true;
    type = (m[2] ?? '').trim();
  }
  const family = /^\w+/.exec(type)?.[0] ?? '';
  if (family === 'Nothing') return { type: undefined, nullable: true };
  return { type: FAMILIES.find(([pattern]) => pattern.test(family))?.[1], nullable };
}

/**
 * Whether a column of this engine type keeps a field's declared type: the same type; an integer for a
 * `number` (every integer is a JSON number); a String for an `object` or an `array` (JSON text, which
 * savedq gives as the value it holds); any type for a column the table cannot tell (`Nothing`, `Dynamic`).
 */
export function keepsType(declared: FieldType, engineType: string): boolean {
  const { type } = columnShape(engineType);
  if (type === undefined || type === declared) return true;
  if (declared === 'number' && type === 'integer') return true;
  return (declared === 'object' || declared === 'array') && /^(Nullable\(|LowCardinality\()*String\b/.test(engineType.trim());
}

/**
 * What differs between a query's declared fields and the columns the engine says its answer has, each
 * at the line of the field (or of `fields:`): a field the answer lacks, a column no field declares, a
 * type that does not map. None when the query declares no fields (its shape is then not promised).
 */
export function shapeProblems(query: SavedQuery, columns: readonly EngineColumn[]): DefinitionProblem[] {
  if (query.fields.length === 0) return [];
  const fieldsLine = query.fieldsLine ?? query.sqlLine;
  const byName = new Map(columns.map((c) => [c.name, c]));
  const declared = new Set(query.fields.map((f) => f.name));
  const undeclared = columns.filter((c) => !declared.has(c.name));
  const missing = query.fields.filter((f) => !byName.has(f.name));
  const problems: DefinitionProblem[] = [];
  for (const field of query.fields) {
    const line = field.line ?? fieldsLine;
    const column = byName.get(field.name);
    if (column === undefined) {
      // A name like it among the columns no field declares, or the one such column when one field is missing.
      const guess = closest(field.name, undeclared.map((c) => c.name)) ?? (missing.length === 1 && undeclared.length === 1 ? undeclared[0]?.name : undefined);
      const has = guess ? ` (it has ${guess}: renamed?)` : ` (its columns: ${columns.map((c) => c.name).join(', ')})`;
      problems.push({ file: query.file, line, message: `field ${field.name} is declared, but the answer has no column ${field.name}${has}.` });
    } else if (!keepsType(field.type, column.type)) {
      const answers = columnShape(column.type).type;
      problems.push({ file: query.file, line, message: `field ${field.name}: declared ${field.type}, but the engine answers ${column.type}${answers ? ` (${answers})` : ''}.` });
    }
  }
  for (const column of undeclared) {
    problems.push({ file: query.file, line: fieldsLine, message: `the answer has a column ${column.name} (${column.type}) that fields: does not declare.` });
  }
  return problems.sort((a, b) => a.line - b.line);
}

/** The field type `check --write-fields` writes for a column: the declared one where the column keeps it, else the table's (string when it cannot tell). */
export function fieldTypeOf(column: EngineColumn, declared?: FieldType): FieldType {
  if (declared !== undefined && keepsType(declared, column.type)) return declared;
  return columnShape(column.type).type ?? 'string';
}
