import { describe, expect, it } from 'vitest';
import { jsonText } from '../src/json.js';
import { plainEachRow, plainRows, savedqValue } from '../src/warehouse/plain.js';
import type { StreamChunk } from '../src/warehouse/types.js';

// A read-only user's answers (warehouse/plain.ts): values as the engine writes them by default, read
// back as savedq's settings would have had them written (ISO 8601 in UTC, 64-bit integers as numbers).

describe("a read-only user's values", () => {
  it('gives a DateTime in UTC whatever the zone it was written in, its fraction kept, across a change of clocks', () => {
    expect(savedqValue('2025-11-30 07:00:00', 'DateTime', 'America/New_York')).toBe('2025-11-30T12:00:00Z');
    expect(savedqValue('2025-06-30 20:00:00', 'DateTime', 'America/New_York')).toBe('2025-07-01T00:00:00Z');
    expect(savedqValue('2025-07-01 05:30:00.25', "DateTime64(2, 'Asia/Kolkata')", 'America/New_York')).toBe('2025-07-01T00:00:00.25Z');
    expect(savedqValue('2026-11-30 12:00:00.000123', "DateTime64(6, 'UTC')", 'Europe/Berlin')).toBe('2026-11-30T12:00:00.000123Z');
    // The hour after the clocks went back (01:30 twice in New York on 2025-11-02): the engine writes the instant's own.
    expect(savedqValue('2025-11-02 03:30:00', 'DateTime', 'America/New_York')).toBe('2025-11-02T08:30:00Z');
    expect(savedqValue('1900-01-01 00:00:00', "DateTime64(0, 'UTC')", 'UTC')).toBe('1900-01-01T00:00:00Z');
    expect(savedqValue(null, 'Nullable(DateTime)', 'UTC')).toBeNull();
    expect(savedqValue('2026-01-01', 'Date', 'UTC')).toBe('2026-01-01');
  });

  it('gives 64-bit and wider integers as numbers, every digit of one past 2^53, in arrays, maps and tuples', () => {
    expect(savedqValue('42', 'UInt64', 'UTC')).toBe(42);
    expect(savedqValue('18446744073709551615', 'UInt64', 'UTC')).toBe(18446744073709551615n);
    expect(savedqValue('-9007199254740993', 'LowCardinality(Nullable(Int64))', 'UTC')).toBe(-9007199254740993n);
    expect(savedqValue(['1', '9007199254740993'], 'Array(UInt64)', 'UTC')).toEqual([1, 9007199254740993n]);
    expect(savedqValue({ a: '7' }, 'Map(String, Int128)', 'UTC')).toEqual({ a: 7 });
    expect(savedqValue({ a: '7', b: '2026-01-01 00:00:00' }, "Tuple(a UInt64, b DateTime('UTC'))", 'UTC')).toEqual({ a: 7, b: '2026-01-01T00:00:00Z' });
    expect(savedqValue(['7', 'x'], 'Tuple(UInt64, String)', 'UTC')).toEqual([7, 'x']);
    // What the engine does not quote is left as it is.
    expect(savedqValue(7, 'UInt32', 'UTC')).toBe(7);
    expect(savedqValue('12', 'String', 'UTC')).toBe('12');
  });

  it("reads FORMAT JSON's rows by its meta", () => {
    const rows = plainRows({ meta: [{ name: 'n', type: 'UInt64' }, { name: 't', type: 'DateTime' }], data: [{ n: '3', t: '2026-01-01 01:00:00' }] }, 'Europe/Berlin');
    expect(rows).toEqual([{ n: 3, t: '2026-01-01T00:00:00Z' }]);
  });

  it('turns JSONCompactEachRowWithNamesAndTypes into JSONEachRow, a line split across parts and a character across bytes', async () => {
    const text = `["n","s","t"]\n["UInt64","String","DateTime('UTC')"]\n["18446744073709551615","é/x","2026-01-01 00:00:00"]\n["1","b","2026-01-02 00:00:00"]\n`;
    const bytes = Buffer.from(text);
    const cut = bytes.indexOf(Buffer.from('é')) + 1;
    async function* parts(): AsyncGenerator<StreamChunk> {
      yield { bytes: bytes.subarray(0, cut) };
      yield { bytes: bytes.subarray(cut) };
    }
    let out = '';
    for await (const part of plainEachRow(parts(), 'UTC')) out += Buffer.from(part.bytes).toString('utf8');
    expect(out).toBe(`${jsonText({ n: 18446744073709551615n, s: 'é/x', t: '2026-01-01T00:00:00Z' })}\n{"n":1,"s":"b","t":"2026-01-02T00:00:00Z"}\n`);
  });
});
