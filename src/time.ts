/**
 * Timestamps are carried as integer microseconds since the Unix epoch (UTC), as a bigint, because the
 * log tables keep microsecond precision and a JavaScript Date keeps only milliseconds.
 */
export type Micros = bigint;

/**
 * The instant a call runs "as of", one name for it in every room: ISO 8601 text as a caller gave it
 * (`--at`, a test case's `at:`), or undefined for "now", the moment the query runs. A prepared call
 * holds it parsed (`Micros | undefined`); the cache's record of a call keeps it canonical, with '' for
 * now (`storedAsOf`, `asOfStored`), and `cache list -f json` shows now as null.
 */
export type AsOf = string | undefined;

/** The cache record's spelling of an instant (canonical ISO text, '' for now). */
export function storedAsOf(at: Micros | undefined): string {
  return at === undefined ? '' : toIsoMicros(at);
}

/** An instant the cache recorded, as a call asks for it again. */
export function asOfStored(stored: string): AsOf {
  return stored === '' ? undefined : stored;
}

/** The range a ClickHouse DateTime64 can hold: its years, and its first and last instant (UTC). */
const MIN_YEAR = 1900;
const MAX_YEAR = 2299;
const MIN_MICROS = BigInt(Date.UTC(MIN_YEAR, 0, 1)) * 1000n;
const MAX_MICROS = BigInt(Date.UTC(MAX_YEAR + 1, 0, 1)) * 1000n - 1n;

/** An ISO 8601 timestamp's shape, as savedq reads one: here, and as the pattern of OpenAPI's schema. */
export const ISO_TIMESTAMP_PATTERN = '^(\\d{4})-(\\d{2})-(\\d{2})(?:[Tt ](\\d{2}):(\\d{2})(?::(\\d{2})(?:[.,](\\d{1,9}))?)?)?(Z|z|[+-]\\d{2}(?::?\\d{2})?)?$';
const ISO_PATTERN = new RegExp(ISO_TIMESTAMP_PATTERN);

/** Months of 31 days, of 30, and February's 28, as the part of a pattern after the year and its dash. */
const MONTH_DAYS = '(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))';

/**
 * The ISO 8601 timestamps parseIsoTimestamp takes, exactly, as one pattern (a JSON Schema's, which
 * has no other way to say them): a real day of the engine's years (1900 to 2299, 29 February of a
 * leap year), a time of day (no leap second), up to nine fractional digits, and Z, an offset or no zone.
 */
export const ISO_TIMESTAMP_EXACT =
  '^(?:(?:19|2[0-2])\\d\\d-' + MONTH_DAYS + '|(?:(?:19|2[0-2])(?:0[48]|[2468][048]|[13579][26])|2000)-02-29)' +
  '(?:[Tt ](?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:[.,]\\d{1,9})?)?)?(?:Z|z|[+-](?:[01]\\d|2[0-3])(?::?[0-5]\\d)?)?$';

/**
 * The dates a `date` parameter takes (what a ClickHouse Date holds, 1970-01-01 to 2149-06-06), exactly,
 * as one pattern: the leap years of that span are 1972 to 2148 but 2100.
 */
export const DATE_EXACT =
  '^(?:(?:19[7-9]\\d|20\\d\\d|21[0-3]\\d|214[0-8])-' + MONTH_DAYS +
  '|(?:19(?:[79][26]|8[048])|20(?:[02468][048]|[13579][26])|21(?:0[48]|[24][048]|[13][26]))-02-29' +
  '|2149-(?:0[135]-(?:0[1-9]|[12]\\d|3[01])|04-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8])|06-0[1-6]))$';

/**
 * Parses an ISO 8601 timestamp to integer microseconds: a date, optionally a time with up to nine
 * fractional digits (kept to the microsecond), and `Z`, an offset, or no zone (= UTC). Returns
 * undefined when the text is not one. (sql/load.sql reads loaded events the same way; a test holds
 * the two to each other.)
 */
export function parseIsoTimestamp(text: string): Micros | undefined {
  const read = readIsoTimestamp(text);
  return read === 'out of range' ? undefined : read;
}

/** What an ISO 8601 timestamp must be, said of one that is not (its shape, or the engine's range). */
export function isoTimestampProblem(text: string): string {
  return readIsoTimestamp(text) === 'out of range'
    ? `a timestamp from ${MIN_YEAR}-01-01T00:00:00Z to ${MAX_YEAR}-12-31T23:59:59.999999Z in UTC (its offset applied), the range the engine holds`
    : 'an ISO 8601 timestamp such as 2026-01-31T12:00:00Z';
}

/** A timestamp read: its microseconds, undefined when it is no ISO 8601 instant, or 'out of range' when it is one the engine cannot hold. */
function readIsoTimestamp(text: string): Micros | 'out of range' | undefined {
  const m = ISO_PATTERN.exec(text);
  if (!m) return undefined;
  const [, ys, mos, ds, hs = '0', mis = '0', ss = '0', frac = '', zone = 'Z'] = m;
  const year = Number(ys);
  const month = Number(mos);
  const day = Number(ds);
  const hour = Number(hs);
  const minute = Number(mis);
  const second = Number(ss);
  if (month < 1 || month > 12 || day < 1) return undefined;
  if (day > daysInMonth(year, month)) return undefined;
  if (year < MIN_YEAR || year > MAX_YEAR) return 'out of range';
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const digits = zone.replace(':', '');
    const oh = Number(digits.slice(1, 3));
    const om = Number(digits.slice(3, 5) || '0');
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om);
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, second) - offsetMinutes * 60_000;
  const micros = BigInt(ms) * 1000n + BigInt(frac.padEnd(6, '0').slice(0, 6) || '0');
  // The instant, its offset applied, is what the engine must hold (1900-01-01T00:00+05:00 is 1899's).
  return micros < MIN_MICROS || micros > MAX_MICROS ? 'out of range' : micros;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Microseconds for a JavaScript Date (or epoch milliseconds). */
export function microsFromDate(date: Date | number): Micros {
  return BigInt(typeof date === 'number' ? date : date.getTime()) * 1000n;
}

function splitMicros(micros: Micros): { date: Date; fraction: string } {
  let seconds = micros / 1_000_000n;
  if (seconds * 1_000_000n > micros) seconds -= 1n; // floor, for instants before 1970
  const fraction = (micros - seconds * 1_000_000n).toString().padStart(6, '0');
  return { date: new Date(Number(seconds) * 1000), fraction };
}

/** `YYYY-MM-DD HH:MM:SS.ffffff`, the text form ClickHouse parses for a DateTime64(6, 'UTC'). */
export function toClickHouseDateTime(micros: Micros): string {
  const { date, fraction } = splitMicros(micros);
  return `${date.toISOString().slice(0, 19).replace('T', ' ')}.${fraction}`;
}

/** `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
export function toIsoMicros(micros: Micros): string {
  const { date, fraction } = splitMicros(micros);
  return `${date.toISOString().slice(0, 19)}.${fraction}Z`;
}

/** The time now as ISO 8601, made once a millisecond however many log lines a millisecond has. */
let stamp = { ms: 0, text: '' };
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== stamp.ms) stamp = { ms, text: isoAt(ms) };
  return stamp.text;
}

/**
 * A time in milliseconds as ISO 8601 (as `toISOString` says it): its date and second made once a
 * second, the milliseconds added to them, as a busy serve says the time of every log line and answer
 * (what `toISOString` costs: docs/performance.md).
 */
let second = { start: NaN, text: '' };
export function isoAt(ms: number): string {
  const start = ms - (((ms % 1000) + 1000) % 1000);
  // `…:SS.` of the second's text, whatever the year's form (`+010000-…` past 9999).
  if (start !== second.start) second = { start, text: new Date(start).toISOString().slice(0, -4) };
  return `${second.text}${String(ms - start).padStart(3, '0')}Z`;
}
