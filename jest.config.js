/** @type {import('jest').Config} */
module.exports = {
  // jest's node environment on a plain V8 context: globals read at V8's speed (the file says why).
  testEnvironment: '<rootDir>/test/helpers/node-environment.js',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.tsx?$': ['@swc/jest', { jsc: { target: 'es2022' } }],
    // ai 7 and its providers, and the Strands Agents SDK, are ESM only (`"type": "module"`). Node 22 `require`s them, but
    // jest's module system does not, so under jest they are compiled to CommonJS.
    '/node_modules/(ai|@ai-sdk/[^/]+|@workflow/[^/]+|@strands-agents/sdk|uuid)/.+\\.m?js$': [
      '@swc/jest',
      { jsc: { target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  // The one ESM file of zod they name by path (`zod/v4/locales/en.js`): its CommonJS twin, so
  // zod stays as it is (compiling all of zod broke test/client/operator-cli.test.ts's stop test).
  moduleNameMapper: { '^zod/v4/locales/en\\.js$': 'zod/v4/locales/en.cjs' },
  transformIgnorePatterns: ['/node_modules/(?!(ai|@ai-sdk/[^/]+|@workflow/[^/]+|@strands-agents/sdk|uuid)/)'],
  testTimeout: 120000,
  // Most tests wait on the Temporal server, not the CPU: two files at a time on 2 cores.
  // Every file uses its own task queues, ids, databases and namespaces, so they never collide.
  maxWorkers: 2,
  // The slowest files first, so they overlap the rest (test/helpers/sequencer.js).
  testSequencer: '<rootDir>/test/helpers/sequencer.js',
  // One Temporal dev server (and one workflow bundle) for the whole run.
  globalSetup: '<rootDir>/test/helpers/temporal-global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/temporal-global-teardown.ts',
};
