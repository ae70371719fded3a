// Writes sql/sandbox-functions.json: which of the engine's functions the SQL a caller sends to a
// sandboxed query may call (docs/sandboxing.md). Run it after an engine upgrade, when the sandbox test names
// functions nobody has decided on, and read the difference before committing it:
//
//   node scripts/sandbox-functions.mjs && git diff sql/sandbox-functions.json
//
// The decision, by the engine's own categories: functions of their arguments alone, the clock and
// randomness are allowed; whatever reads anything else (dictionaries, the engine's state or settings,
// the machine, files, the network) or waits is refused. "Other" holds both kinds, so each of its
// functions is decided by name below.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session } from 'chdb';

/** Categories whose functions read only their arguments (or the clock, or randomness). */
const PURE = new Set([
  'Aggregate Functions', 'Arithmetic', 'Arrays', 'Bit', 'Bitmap', 'Comparison', 'Conditional', 'Dates and Times', 'Distance',
  'Encoding', 'Encryption', 'Financial', 'Geo', 'Geo Polygon', 'Hash', 'IP Address', 'JSON', 'Logical', 'Machine Learning', 'Map',
  'Mathematical', 'Null', 'NumericIndexedVector', 'QBit', 'Random Number', 'Rounding', 'String', 'String Replacement', 'String Search',
  'String Splitting', 'Time Series', 'Time Window', 'Tuple', 'Type Conversion', 'URL', 'UUID',
]);
/** Refused whole, with why. */
const REFUSED_CATEGORIES = {
  Dictionary: 'reads a dictionary',
  'Embedded Dictionary': "reads the engine's embedded dictionaries",
  Introspection: "reads the engine's own state",
  Internal: "is the engine's own",
  AI: 'reaches the network',
};
/** Functions of "Other" that read only their arguments. */
const PURE_OTHER = new Set([
  'MACNumToString', 'MACStringToNum', 'MACStringToOUI', 'bar', 'byteSize', 'colorOKLABToSRGB', 'colorOKLCHToSRGB', 'colorSRGBToOKLAB',
  'colorSRGBToOKLCH', 'countDigits', 'defaultValueOfArgumentType', 'defaultValueOfTypeName', 'digits', 'errorCodeToName',
  'finalizeAggregation', 'flipCoordinates', 'formatReadableDecimalSize', 'formatReadableQuantity', 'formatReadableSize',
  'formatReadableTimeDelta', 'getSizeOfEnumType', 'getSubcolumn', 'identity', 'ignore', 'initializeAggregation', 'isConstant',
  'isDecimalOverflow', 'materialize', 'minSampleSizeContinuous', 'minSampleSizeConversion', 'neighbor', 'parseReadableSize',
  'parseReadableSizeOrNull', 'parseReadableSizeOrZero', 'parseTimeDelta', 'runningAccumulate', 'runningDifference',
  'runningDifferenceStartingWithFirstValue', 'throwIf', 'toColumnTypeName', 'toTypeName', 'transform', 'variantElement', 'variantType',
  'visibleWidth',
]);
/** Refused although their category is pure: they reach beyond the query's own rows. */
const REFUSED_NAMES = {
  globalIn: 'reads other servers', globalNotIn: 'reads other servers', globalNullIn: 'reads other servers', globalNotNullIn: 'reads other servers',
};
/** Written as functions in the parse, not listed among the engine's functions. */
const SYNTAX = ['lambda', 'exists'];

const dir = mkdtempSync(join(tmpdir(), 'savedq-functions-'));
try {
  const session = new Session(join(dir, 'data'));
  const rows = (sql) => session.query(sql, 'JSONEachRow').split('\n').filter(Boolean).map((line) => JSON.parse(line));
  const [{ version }] = rows('SELECT version() AS version');
  const functions = rows("SELECT name, alias_to, categories, is_aggregate, case_insensitive FROM system.functions ORDER BY name");
  const byName = new Map(functions.map((f) => [f.name, f]));
  const reasonOf = (f) => {
    const target = f.alias_to ? (byName.get(f.alias_to) ?? f) : f;
    // Own keys only: a function named toString or constructor is no key of these objects'.
    if (Object.hasOwn(REFUSED_NAMES, target.name)) return REFUSED_NAMES[target.name];
    if (Object.hasOwn(REFUSED_CATEGORIES, target.categories)) return REFUSED_CATEGORIES[target.categories];
    if (PURE.has(target.categories)) return undefined;
    if (target.categories === 'Other' && PURE_OTHER.has(target.name)) return undefined;
    return 'reads beyond its arguments, or waits';
  };
  const allowed = [];
  const refused = Object.create(null);
  for (const f of functions) {
    const reason = reasonOf(f);
    if (reason === undefined) allowed.push(f.name);
    else refused[f.name] = reason;
  }
  const decided = {
    engine: version,
    allowed: [...allowed, ...SYNTAX].sort(),
    refused,
    anyCase: functions.filter((f) => f.case_insensitive && reasonOf(f) === undefined).map((f) => f.name.toLowerCase()).sort(),
    aggregates: functions.filter((f) => f.is_aggregate && reasonOf(f) === undefined).map((f) => f.name).sort(),
    combinators: rows('SELECT name FROM system.aggregate_function_combinators ORDER BY length(name) DESC, name').map((r) => r.name),
  };
  const out = fileURLToPath(new URL('../sql/sandbox-functions.json', import.meta.url));
  writeFileSync(out, `${JSON.stringify(decided, null, 1)}\n`);
  process.stdout.write(`${out}: ${decided.allowed.length} allowed, ${Object.keys(refused).length} refused (engine ${version})\n`);
  session.cleanup?.();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
