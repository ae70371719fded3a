/**
 * The package's root directory, which holds `sql/` and `package.json`. Found from this module's own
 * place, one level under the root both as tsc builds it (`dist/package.js`), as the tests run it
 * (`src/package.ts`) and inside the CLI bundle (`dist/savedq.cjs`, see esbuild.config.mjs), where
 * every `import.meta.url` is the bundle's. So `import.meta.url` is read here and nowhere else.
 */
export const packageRoot = new URL('../', import.meta.url);
