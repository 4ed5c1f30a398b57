/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.tsx?$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  testTimeout: 120000,
  // One Temporal dev server (and one workflow bundle) for the whole run.
  globalSetup: '<rootDir>/test/helpers/temporal-global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/temporal-global-teardown.ts',
};
