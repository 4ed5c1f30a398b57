// @ts-check
const tseslint = require('typescript-eslint');

const nodeBuiltins = require('module').builtinModules.flatMap((m) => [m, `node:${m}`]);

module.exports = tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.tools/**',
      'data/**',
      'coverage/**',
      'eslint.config.js',
      'jest.config.js',
      'dist/**',
      '.pack/**',
      'examples/*/node_modules/**',
      'examples/*/data/**',
    ],
  },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: __dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code is replayed: it may not touch Node, the network, the file system or activity code.
    files: ['workflows/**/*.ts', 'common/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflow/common code must stay sandbox-safe.',
          })),
          patterns: [
            {
              group: [
                '**/activities/**',
                '**/activities',
                '@temporalio/activity',
                '@temporalio/worker',
                '@temporalio/client',
              ],
              message: 'Workflows import activities as types only (import type).',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
  {
    // The guard is pure: not even the Temporal workflow runtime.
    files: ['guard/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'The guard is pure.' })),
          patterns: [
            {
              group: ['@temporalio/*', '**/activities/**'],
              message: 'The guard is pure: no Temporal, no activities.',
            },
          ],
        },
      ],
    },
  },
);
