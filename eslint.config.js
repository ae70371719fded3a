import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { languageOptions: { globals: globals.node } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  // TypeScript's code is linted with its types (typescript-eslint's strict-type-checked, as clickhouse-js
  // does): a promise neither awaited nor handled, an any spreading from a parse, a needless assertion.
  {
    files: ['src/**/*.ts', 'test/**/*.ts'],
    extends: [...tseslint.configs.strictTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // Numbers and booleans read as themselves in a message.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // Left off, each for what it would have savedq do: what the store, the engine and the network
      // send is typed as what it should be, and checked at run time all the same (a check the types call
      // needless is what keeps a bad record from becoming a crash); an async function answers an
      // interface that returns a promise whether or not it waits (a memo, a renderer); String() of an
      // engine's value is the text wanted; a type parameter named once is a caller's say of what a lazy
      // module or a parsed document is.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/no-unnecessary-type-parameters': 'off',
    },
  },
  // vitest's asymmetric matchers (expect.any(Number), expect.stringMatching) are typed any, and stand
  // inside the values they are compared with.
  {
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off', '@typescript-eslint/no-unsafe-return': 'off', '@typescript-eslint/no-unsafe-argument': 'off' },
  },
  { files: ['bin/**', 'bench/**'], rules: { 'no-console': 'off' } },
  // The CLI's bundle starts every room it holds, so what a room imports every run loads (src/lazy.ts).
  {
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'node:crypto', message: 'use nodeCrypto() from src/lazy.ts: no cache hit needs node:crypto, which Node 22 and 24 start without.', allowTypeImports: true },
            { name: 'uuid', message: 'use the lazy uuid of src/queries/definition.ts: the package loads node:crypto.', allowTypeImports: true },
          ],
        },
      ],
    },
  },
  // bin/ is CommonJS (bin/package.json): it loads the CommonJS launcher, see esbuild.config.mjs.
  { files: ['bin/**'], languageOptions: { sourceType: 'commonjs' }, rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
