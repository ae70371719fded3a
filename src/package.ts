import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The package's root directory, which holds `sql/` and `package.json`. Found from this module's own
 * place, one level under the root both as tsc builds it (`dist/package.js`), as the tests run it
 * (`src/package.ts`) and inside the CLI bundle (`dist/savedq.cjs`, see esbuild.config.mjs), where
 * every `import.meta.url` is the bundle's. So `import.meta.url` is read here and nowhere else.
 */
export const packageRoot = new URL('../', import.meta.url);

/** The folder of the package's SQL: the schema, the load rules, the built-in and example queries. */
const sqlDir = new URL('sql/', packageRoot);

/** Reads a file of the package's `sql/` folder. */
export function readSqlFile(name: string): string {
  return readFileSync(new URL(name, sqlDir), 'utf8');
}

/** The folder of the built-in saved queries. */
export const builtinQueriesDir = fileURLToPath(new URL('queries/', sqlDir));

/** The folder of the example saved queries (and their tests). */
export const examplesDir = fileURLToPath(new URL('examples/', sqlDir));

/** savedq's version, from its package.json (read when first asked). */
export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(new URL('package.json', packageRoot), 'utf8')) as { version: string }).version;
  return version;
}
let version: string | undefined;
