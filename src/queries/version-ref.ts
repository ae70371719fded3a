/**
 * How a version of a saved query is named: `<name>@<N>` (or `<id>@<N>`) on the command line, in an
 * alert's or a token's query, and as the file `<name>@<N>.sql` that keeps it (docs/queries.md, "Versions").
 */
import { InputError } from '../errors.js';

/** The largest version a header may say: six digits, as a version asked is read. */
export const MAX_VERSION = 999_999;
/** A version as text: a whole number from 1, no leading zero, at most MAX_VERSION. */
const VERSION_TEXT = '[1-9][0-9]{0,5}';
const REF = new RegExp(`^(.+)@(${VERSION_TEXT})$`);
const VERSION = new RegExp(`^${VERSION_TEXT}$`);

/** A name or id with the version it pins, if any: `usage.api-counts@2` → usage.api-counts, 2. */
export function splitVersion(ref: string): { key: string; version: number | undefined } {
  const match = REF.exec(ref);
  return match ? { key: match[1] as string, version: Number(match[2]) } : { key: ref, version: undefined };
}

/** The query and version a file's name keeps: `<name>@<N>` (N a whole number from 1), else undefined. */
export function keptVersionOf(stem: string): { name: string; version: number } | undefined {
  const { key, version } = splitVersion(stem);
  return version === undefined ? undefined : { name: key, version };
}

/** How a version is named: `name@N`. */
export function versionRef(query: { readonly name: string; readonly version: number }): string {
  return `${query.name}@${query.version}`;
}

/** How a call of a query is named where calls are listed (warm, cache list): a kept version as `name@N`. */
export function callName(query: { readonly name: string; readonly version: number; readonly kept?: boolean | undefined }): string {
  return query.kept === true ? versionRef(query) : query.name;
}

/** The HTTP header that pins a version in a request and says it in an answer. */
export const VERSION_HEADER = 'Savedq-Version';

/** A version a caller asked for, as a number; an InputError naming where it came from when it is not one. */
export function askedVersion(text: string, where: string): number {
  const trimmed = text.trim();
  if (!VERSION.test(trimmed)) throw new InputError(`${where} ${JSON.stringify(text.slice(0, 20))} is not a version: a whole number from 1.`);
  return Number(trimmed);
}

/** The headers an answer of an older version with a sunset carries: Deprecation (RFC 9745) and Sunset (RFC 8594). */
export function sunsetHeaders(query: { readonly sunsetMs?: number | undefined; readonly deprecatedMs?: number | undefined }): [string, string][] {
  if (query.sunsetMs === undefined) return [];
  const since = query.deprecatedMs ?? query.sunsetMs;
  return [
    ['Deprecation', `@${Math.floor(since / 1000)}`],
    ['Sunset', new Date(query.sunsetMs).toUTCString()],
  ];
}

/** A sunset as people read it: the date alone when it is midnight UTC (as `sunset: 2027-01-31` means), else the instant. */
export function sunsetText(ms: number): string {
  return new Date(ms).toISOString().replace('T00:00:00.000Z', '');
}

/**
 * What names a query's calls where they are kept (the cache's records, a test's run): a kept version
 * by `id@N`, so it is found again as that version; the current one by its id, so a call of a version
 * since replaced finds the new one (and its digest, not the old one's).
 */
export function callRef(query: { readonly id: string; readonly version: number; readonly kept?: boolean | undefined }): string {
  return query.kept === true ? `${query.id}@${query.version}` : query.id;
}
