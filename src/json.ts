import { isInteger, parse, stringify } from 'lossless-json';

// JSON of answers, whose integers may be past what a double holds exactly (2^53): the engine writes a
// 64-bit integer (UInt64, Int64, and wider) as a JSON number of every digit, which JSON.parse rounds
// (9007199254740993 is read as …992) and JSON.stringify cannot write back as a bigint. Such an integer is
// kept as a bigint, read and written with every digit (lossless-json); every other value is read and
// written as JSON.parse and JSON.stringify do, by them whenever a text or a value holds no such integer.

/** A JSON number's text as savedq keeps it: a bigint when a double cannot hold the integer exactly, else a number. */
function numberOf(text: string): number | bigint {
  const n = Number(text);
  return Math.abs(n) > Number.MAX_SAFE_INTEGER && isInteger(text) && String(n) !== text ? BigInt(text) : n;
}

/** Sixteen digits in a row: every integer past 2^53 has them, so a text without is read by JSON.parse. */
const LONG_DIGITS = /\d{16}/;

/** JSON text read as JSON.parse reads it, but an integer a double cannot hold is a bigint of every digit. */
export function parseJson(text: string): unknown {
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  // A key given twice keeps its last value, as JSON.parse does.
  return parse(text, undefined, { parseNumber: numberOf, onDuplicateKey: ({ newValue }) => newValue });
}

/** A value as JSON text, as JSON.stringify writes it, but a bigint as the number of every digit it is. */
export function jsonText(value: unknown, space?: number): string {
  try {
    return JSON.stringify(value, undefined, space);
  } catch (err) {
    // What JSON.stringify refuses (TypeError) in a row is a bigint.
    if (!(err instanceof TypeError)) throw err;
    return stringify(value, undefined, space) as string;
  }
}

/** `JSON.rawJSON` (Node 21 and later): a value JSON.stringify writes as the text given. */
const rawJson = (JSON as { rawJSON?: (text: string) => unknown }).rawJSON;

/**
 * A value for code that writes it with JSON.stringify itself (the MCP SDK's transports): its bigints as
 * raw JSON numbers where Node has JSON.rawJSON (22 and later), else (Node 20) as texts of their digits,
 * which keep every digit at least.
 */
export function forJsonStringify(value: unknown): unknown {
  if (typeof value === 'bigint') return rawJson ? rawJson(value.toString()) : value.toString();
  if (Array.isArray(value)) return value.map(forJsonStringify);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, forJsonStringify(v)]));
  return value;
}

/** Whether a value holds a bigint anywhere within it (which JSON.stringify cannot write). */
export function holdsBigInt(value: unknown): boolean {
  if (typeof value === 'bigint') return true;
  if (Array.isArray(value)) return value.some(holdsBigInt);
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) if (holdsBigInt(inner)) return true;
  }
  return false;
}
