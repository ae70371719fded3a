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
