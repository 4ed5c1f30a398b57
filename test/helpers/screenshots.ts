/**
 * Where the browser tests (test/e2e/) save their screenshots. docs/*.png are tracked files the
 * docs show, so a test run must not rewrite them (`git status` stays clean after `npm test`):
 * by default the screenshots go to test-results/screenshots/ (git-ignored), and only
 * `UPDATE_SCREENSHOTS=1 npx jest test/e2e/…` refreshes docs/.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Set to 1 to write the screenshots into docs/ (the pictures the docs show). */
export const UPDATE_SCREENSHOTS_ENV = 'UPDATE_SCREENSHOTS';

const ROOT = resolve(__dirname, '../..');

/** The folder screenshots go to in this run: docs/ when asked for, else test-results/screenshots/. */
export function screenshotDir(env: NodeJS.ProcessEnv = process.env): string {
  return env[UPDATE_SCREENSHOTS_ENV] === '1' ? join(ROOT, 'docs') : join(ROOT, 'test-results', 'screenshots');
}

/** The path to save the screenshot `name` (e.g. `temporal-ui.png`) to; makes its folder. */
export function screenshotPath(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const dir = screenshotDir(env);
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
