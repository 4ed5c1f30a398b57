// @ts-check
const tseslint = require('typescript-eslint');

const nodeBuiltins = require('module').builtinModules.flatMap((m) => [m, `node:${m}`]);

// The rooms of the house (docs/architecture.md). The product imports nothing of the demo, of the
// entry points (bin/, scripts/) or of the dev tooling (devserver/); entry points compose them.
const PRODUCT = [
  'index.ts',
  '{activities,storage,tools,planners,operators,connection,codec,client,worker,ai-sdk,core,openai-agents,strands-agents}/**/*.ts',
];
const NOT_PRODUCT = {
  group: ['**/demo/**', '**/demo', '**/scripts/**', '**/devserver/**', '**/bin/**'],
  message:
    'The product imports no demo, entry point or dev tooling (docs/architecture.md): an entry point composes them.',
};
// What the client may not reach into: the worker's process (it shares connection/ and storage/).
const NOT_WORKER = {
  group: ['**/worker/**', '**/worker'],
  message: 'client/ imports no worker internals: what both need lives in connection/ or storage/.',
};
// Replayed code: what runs inside the workflow sandbox, on every engine. A framework adapter's
// folder is workflow code but for its `worker.ts` (the worker half's wiring, Node code).
const ADAPTERS = ['ai-sdk', 'openai-agents', 'strands-agents'];
const WORKFLOW_SIDE = [
  'workflows/**/*.ts',
  'common/**/*.ts',
  'core/**/*.ts',
  ...ADAPTERS.map((a) => `${a}/**/*.ts`),
];
const ADAPTER_WORKER_SIDE = ADAPTERS.map((a) => `${a}/worker.ts`);
const WORKFLOW_PATTERNS = [
  {
    group: [
      '**/activities/**',
      '**/activities',
      '**/storage/**',
      '**/tools/**',
      '**/planners/**',
      '**/operators/**',
      '**/worker/**',
      '**/worker',
      '**/client/**',
      '@temporalio/activity',
      '@temporalio/worker',
      '@temporalio/client',
    ],
    message:
      'Workflow code imports activity, worker and client code as types only (import type): it is replayed in the sandbox.',
    allowTypeImports: true,
  },
  NOT_PRODUCT,
];

// How long a file of the product may grow: counted as `wc -l` counts (blank lines and
// comments included, so the figure is the one a reader sees), 450 lines, and 350 for workflows/
// (replayed code, read most carefully). A file that reaches the limit is split by concept.
const MAX_LINES = { skipBlankLines: false, skipComments: false };
const PRODUCT_CODE = [...PRODUCT, 'guard/**/*.ts', 'common/**/*.ts'];

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
      '.bench-app/**',
      'examples/*/node_modules/**',
      'examples/*/data/**',
      'bench/peers/**',
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
    files: PRODUCT_CODE,
    rules: { 'max-lines': ['error', { max: 450, ...MAX_LINES }] },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 350, ...MAX_LINES }] },
  },
  {
    // The named exception: the ordered migration list is frozen (an applied migration is never
    // edited, only appended to), so it grows with the schema and is not split.
    files: ['storage/migrations.ts'],
    rules: { 'max-lines': 'off' },
  },
  {
    files: PRODUCT,
    ignores: ['client/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_PRODUCT] }] },
  },
  {
    files: ['client/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_PRODUCT, NOT_WORKER] }] },
  },
  {
    // Workflow code is replayed: it may not touch Node, the network, the file system or activity
    // code. The core and the framework adapters' workflow side are replayed as workflows/ is.
    files: WORKFLOW_SIDE,
    ignores: ADAPTER_WORKER_SIDE,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflow/common code must stay sandbox-safe.',
          })),
          patterns: WORKFLOW_PATTERNS,
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
              group: ['@temporalio/*', '**/activities/**', '**/storage/**', '**/tools/**', '**/planners/**'],
              message: 'The guard is pure: no Temporal, no activities.',
            },
            NOT_PRODUCT,
          ],
        },
      ],
    },
  },
);
