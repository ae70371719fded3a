import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { forJsonStringify, holdsBigInt, jsonText, parseJson } from '../src/json.js';

// JSON of answers: an integer a double cannot hold is a bigint of every digit; everything else as
// JSON.parse and JSON.stringify have it.

describe('parseJson and jsonText', () => {
  it('read an integer past 2^53 as a bigint of every digit, and write it back so, nested too', () => {
    const text = '{"big":9007199254740993,"neg":-9223372036854775807,"top":[18446744073709551615,1],"f":1.5,"edge":9007199254740991,"m":{"id":12345678901234567890}}';
    const value = parseJson(text);
    expect(value).toEqual({ big: 9007199254740993n, neg: -9223372036854775807n, top: [18446744073709551615n, 1], f: 1.5, edge: 9007199254740991, m: { id: 12345678901234567890n } });
    expect(jsonText(value)).toBe(text);
    expect(holdsBigInt(value)).toBe(true);
    expect(holdsBigInt({ a: [1, { b: 'x' }] })).toBe(false);
  });

  it('keep what JSON.parse and JSON.stringify do for every value without such an integer: a key given twice keeps its last, -0 its sign', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        expect(parseJson(text)).toEqual(JSON.parse(text));
        expect(jsonText(value)).toBe(text);
        expect(jsonText(value, 2)).toBe(JSON.stringify(value, undefined, 2));
      }),
    );
    // Sixteen digits in a text take the other reader: it must agree with JSON.parse there too.
    const long = '{"a":1,"a":2,"z":-0,"s":"1234567890123456 in a text","e":1e21,"d":0.1234567890123456}';
    expect(Object.is((parseJson(long) as { z: number }).z, -0)).toBe(true);
    expect(parseJson(long)).toEqual(JSON.parse(long));
  });

  it('give the MCP SDK raw numbers where Node writes them (JSON.rawJSON), texts of every digit where not', () => {
    const written = JSON.stringify(forJsonStringify({ rows: [{ big: 9007199254740993n, n: 1 }] }));
    expect(written).toBe(typeof (JSON as { rawJSON?: unknown }).rawJSON === 'function' ? '{"rows":[{"big":9007199254740993,"n":1}]}' : '{"rows":[{"big":"9007199254740993","n":1}]}');
  });
});
