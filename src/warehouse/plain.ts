import { StringDecoder } from 'node:string_decoder';
import { jsonText, parseJson } from '../json.js';
import type { StreamChunk, WarehouseRow } from './types.js';

// Answers of a host whose user may set nothing (readonly=1, profile.ts) come in the server's default
// output formats: a DateTime as `2026-11-30 12:00:00` in its time zone (savedq asks for ISO 8601 in
// UTC), and 64-bit integers quoted in JSON (savedq asks for numbers). Read with the types the engine
// gives beside them (FORMAT JSON's `meta`, JSONCompactEachRowWithNamesAndTypes's second row), each value
// becomes what the same query gives through any other user, so an answer never depends on who asked.

/** Integers the engine quotes in JSON by default (output_format_json_quote_64bit_integers). */
const WIDE_INTEGER = /^U?Int(64|128|256)$/;
const DATE_TIME = /^DateTime(?:\(\s*'([^']+)'\s*\))?$/;
const DATE_TIME_64 = /^DateTime64\(\s*\d+\s*(?:,\s*'([^']+)'\s*)?\)$/;
/** A DateTime as the engine writes it by default: date, time, and the fraction of a DateTime64. */
const SIMPLE_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d+)?$/;

/** A type's arguments (`Map(String, UInt64)` → `String`, `UInt64`), split where no parenthesis or quote is open. */
function typeArguments(inner: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < inner.length; i += 1) {
    const c = inner[i];
    if (quoted) {
      if (c === '\\') i += 1;
      else if (c === "'") quoted = false;
    } else if (c === "'") quoted = true;
    else if (c === '(') depth += 1;
    else if (c === ')') depth -= 1;
    else if (c === ',' && depth === 0) {
      parts.push(inner.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(inner.slice(start).trim());
  return parts;
}

/** A type's name and its arguments' text: `Array(UInt64)` → Array, `UInt64`. */
function typeParts(type: string): { name: string; inner: string | undefined } {
  const open = type.indexOf('(');
  if (open < 0 || !type.endsWith(')')) return { name: type, inner: undefined };
  return { name: type.slice(0, open), inner: type.slice(open + 1, -1) };
}

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

/** How far a time zone's clocks are ahead of UTC at an instant, in ms. */
function offsetAt(instant: number, timezone: string): number {
  let format = offsetFormats.get(timezone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: timezone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    offsetFormats.set(timezone, format);
  }
  const part = Object.fromEntries(format.formatToParts(new Date(instant)).map((p) => [p.type, Number(p.value)]));
  const wall = Date.UTC(part.year ?? 0, (part.month ?? 1) - 1, part.day ?? 1, part.hour ?? 0, part.minute ?? 0, part.second ?? 0);
  return wall - Math.floor(instant / 1000) * 1000;
}

/** A DateTime as the engine writes it by default (wall time in `timezone`) as savedq's ISO 8601 in UTC, its fraction kept. */
function isoTime(text: string, timezone: string): string {
  const m = SIMPLE_TIME.exec(text);
  if (!m) return text;
  const wall = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  let instant = wall;
  if (!/^(UTC|Etc\/UTC|GMT|Etc\/GMT|UCT|Zulu)$/i.test(timezone)) {
    // The instant whose wall time this is: the offset at the first guess, checked at the instant it gives.
    instant = wall - offsetAt(wall, timezone);
    const again = wall - offsetAt(instant, timezone);
    if (again !== instant) instant = again;
  }
  // (Years 1900 to 2299, a DateTime's range: toISOString's 24 characters.)
  return `${new Date(instant).toISOString().slice(0, 19)}${m[7] ?? ''}Z`;
}

/** A value as the engine writes it by default, of `type`, as savedq's settings would have had it written. */
export function savedqValue(value: unknown, type: string, timezone: string): unknown {
  if (value === null || value === undefined) return value;
  const { name, inner } = typeParts(type.trim());
  if ((name === 'Nullable' || name === 'LowCardinality') && inner !== undefined) return savedqValue(value, inner, timezone);
  if (typeof value === 'string') {
    if (WIDE_INTEGER.test(type) && /^-?\d+$/.test(value)) {
      const big = BigInt(value);
      return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
    }
    const zone = DATE_TIME.exec(type) ?? DATE_TIME_64.exec(type);
    if (zone) return isoTime(value, zone[1] ?? timezone);
    return value;
  }
  if (inner === undefined) return value;
  if (name === 'Array' && Array.isArray(value)) return value.map((v) => savedqValue(v, inner, timezone));
  if (name === 'Map' && typeof value === 'object') {
    const [, valueType = ''] = typeArguments(inner);
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, savedqValue(v, valueType, timezone)]));
  }
  if (name === 'Tuple') {
    // Elements named (`a UInt64`, written as an object) or not (written as an array).
    const elements = typeArguments(inner).map((e) => /^([A-Za-z_]\w*|`[^`]+`)\s+(.+)$/.exec(e));
    if (Array.isArray(value)) return value.map((v, i) => savedqValue(v, elements[i]?.[2] ?? typeArguments(inner)[i] ?? '', timezone));
    if (typeof value === 'object') {
      const types = new Map(elements.flatMap((e) => (e ? [[(e[1] ?? '').replace(/^`|`$/g, ''), e[2] ?? '']] : [])));
      return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, savedqValue(v, types.get(k) ?? '', timezone)]));
    }
  }
  return value;
}

/** FORMAT JSON's answer (rows, and the types in `meta`) with each value as savedq's settings would have had it. */
export function plainRows(body: { meta?: { name: string; type: string }[]; data: WarehouseRow[] }, timezone: string): WarehouseRow[] {
  const types = new Map((body.meta ?? []).map((m) => [m.name, m.type]));
  for (const row of body.data) {
    for (const [name, value] of Object.entries(row)) row[name] = savedqValue(value, types.get(name) ?? '', timezone);
  }
  return body.data;
}

/**
 * An answer in JSONCompactEachRowWithNamesAndTypes (the names, the types, then a row a line) as
 * JSONEachRow, each value as savedq's settings would have had it written, part by part.
 */
export async function* plainEachRow(parts: AsyncIterable<StreamChunk>, timezone: string): AsyncGenerator<StreamChunk> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let names: string[] | undefined;
  let types: string[] | undefined;
  const lines = (text: string): string => {
    const out: string[] = [];
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const values = parseJson(line) as unknown[];
      if (names === undefined) names = values.map(String);
      else if (types === undefined) types = values.map(String);
      else {
        const row: WarehouseRow = {};
        values.forEach((v, i) => (row[names?.[i] ?? String(i)] = savedqValue(v, types?.[i] ?? '', timezone)));
        out.push(`${jsonText(row)}\n`);
      }
    }
    return out.join('');
  };
  for await (const part of parts) {
    const text = pending + decoder.write(Buffer.from(part.bytes.buffer, part.bytes.byteOffset, part.bytes.byteLength));
    const end = text.lastIndexOf('\n') + 1;
    pending = text.slice(end);
    const out = lines(text.slice(0, end));
    if (out !== '') yield { bytes: Buffer.from(out) };
  }
  const out = lines(pending + decoder.end());
  if (out !== '') yield { bytes: Buffer.from(out) };
}
