import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'bench/results/', 'scratch/', '.vitest-tmp/', 'web/vendor/', 'web/dashboard/dist/', 'build/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    files: ['bin/**/*.js', 'web/**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', document: 'readonly', window: 'readonly', fetch: 'readonly' } },
  },
);
