import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DefinitionError } from '../src/errors.js';
import { builtinQueriesDir } from '../src/package.js';
import { QueryCatalog } from '../src/queries/catalog.js';
import { readDefinition } from '../src/queries/definition.js';
import { withVersion } from '../src/queries/raise-version.js';
import { askedVersion, splitVersion, sunsetHeaders } from '../src/queries/version-ref.js';
import { tempDir } from './helpers.js';

// How versions are named and written (docs/queries.md, "Versions"): name@N, the header savedq version
// raises, and the headers of an answer of a version with a sunset.

const versionOf = (text: string, stem = 'q') => {
  const read = readDefinition(`/q/${stem}.sql`, text, stem, false);
  if (!read.query) throw new Error(JSON.stringify(read.problems));
  return read.query.version;
};

describe('withVersion', () => {
  it('replaces the version a header says, and leaves every other byte as it was', () => {
    const text = '/*\nname: q\nversion: 3   # raised for the new shape\ndescription: x\n*/\nSELECT 1 AS one\n';
    expect(withVersion(text, 4)).toBe(text.replace('version: 3', 'version: 4'));
  });

  it('adds version: after the id (or the name), at its indentation, else first in the header; a file without a header gets one', () => {
    expect(withVersion('/*\n  name: q\n  id: 0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01\n  description: x\n*/\nSELECT 1\n', 2)).toBe('/*\n  name: q\n  id: 0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01\n  version: 2\n  description: x\n*/\nSELECT 1\n');
    expect(withVersion('/* name: q */\nSELECT 1\n', 2)).toBe('/* name: q \n version: 2*/\nSELECT 1\n');
    expect(withVersion('/*\ndescription: x\n*/\nSELECT 1\n', 2)).toBe('/*\nversion: 2\ndescription: x\n*/\nSELECT 1\n');
    expect(withVersion('SELECT 1\n', 2)).toBe('/*\nversion: 2\n*/\nSELECT 1\n');
    for (const text of ['/* name: q */\nSELECT 1\n', '/*\n  name: q\n  id: 0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01\n*/\nSELECT 1\n', '/*\ndescription: x\n*/\nSELECT 1\n', 'SELECT 1\n']) {
      expect(versionOf(withVersion(text, 7))).toBe(7);
    }
  });
});

describe('a version asked', () => {
  it('is name@N or id@N, N a whole number from 1', () => {
    expect(splitVersion('usage.api-counts@2')).toEqual({ key: 'usage.api-counts', version: 2 });
    expect(splitVersion('usage.api-counts')).toEqual({ key: 'usage.api-counts', version: undefined });
    expect(splitVersion('q@0')).toEqual({ key: 'q@0', version: undefined });
    expect(splitVersion('q@02')).toEqual({ key: 'q@02', version: undefined });
    expect(askedVersion(' 3 ', 'version')).toBe(3);
    for (const bad of ['0', '-1', '1.5', 'two', '', '1e3']) expect(() => askedVersion(bad, 'version')).toThrow(/is not a version: a whole number from 1/);
  });

  it("is the file's own in <name>@<N>.sql, which says no other in its header", () => {
    expect(versionOf('/*\ndescription: x\n*/\nSELECT 1\n', 'q@3')).toBe(3);
    const read = readDefinition('/q/q@3.sql', '/*\nversion: 4\n*/\nSELECT 1\n', 'q@3', false);
    expect(read.problems?.map((p) => `${p.line}: ${p.message}`)).toEqual(['2: this file keeps version 3 (its name ends @3), but its header says version: 4.']);
  });
});

describe('sunset headers', () => {
  it('say Deprecation (RFC 9745, seconds since the epoch) and Sunset (RFC 8594, an HTTP date); none without a sunset', () => {
    const sunset = Date.parse('2027-01-31T00:00:00Z');
    expect(sunsetHeaders({ sunsetMs: sunset })).toEqual([
      ['Deprecation', `@${sunset / 1000}`],
      ['Sunset', 'Sun, 31 Jan 2027 00:00:00 GMT'],
    ]);
    expect(sunsetHeaders({ sunsetMs: sunset, deprecatedMs: Date.parse('2026-12-01T00:00:00Z') })[0]).toEqual(['Deprecation', '@1796083200']);
    expect(sunsetHeaders({})).toEqual([]);
  });
});

describe('the catalog finds a version', () => {
  it('a kept version runs while the current file is broken; a version whose file is broken, or an unknown one of a broken query, names the broken file', async () => {
    const dir = join(tempDir(), 'q');
    mkdirSync(dir);
    writeFileSync(join(dir, 'counts.sql'), '/*\nversion: 2\nparams: [\n*/\nSELECT 1 AS n\n');
    writeFileSync(join(dir, 'counts@1.sql'), '/*\ndescription: one\n*/\nSELECT 1 AS n\n');
    writeFileSync(join(dir, 'other.sql'), '/*\nversion: 2\n*/\nSELECT 1 AS n\n');
    writeFileSync(join(dir, 'other@1.sql'), '/*\nparams: {x: {type: nope}}\n*/\nSELECT 1 AS n\n');
    const catalog = new QueryCatalog({ builtin: builtinQueriesDir, user: [dir] });
    expect(await catalog.find('counts@1')).toMatchObject({ name: 'counts', version: 1, kept: true });
    for (const [ref, file] of [['counts', 'counts.sql'], ['counts@2', 'counts.sql'], ['counts@3', 'counts.sql'], ['other@1', 'other@1.sql']] as const) {
      const err = await catalog.find(ref).catch((e: unknown) => e);
      expect(err, ref).toBeInstanceOf(DefinitionError);
      expect((err as DefinitionError).files, ref).toEqual([join(dir, file)]);
    }
    expect(await catalog.find('other')).toMatchObject({ version: 2 });
    await expect(catalog.find('other@3')).rejects.toThrow('other has no version 3; its versions: 2 (2 the current one).');
  });
});
