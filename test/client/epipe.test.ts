/**
 * `agentctl … | head`: a reader that closes the pipe early ends agentctl quietly (exit 0),
 * without an unhandled EPIPE stack on stderr.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

it('exits 0 without an EPIPE error when its reader goes away', () => {
  const traces = readdirSync(join(ROOT, 'test/fixtures/traces')).map((f) => `test/fixtures/traces/${f}`);
  // Enough output to outgrow the pipe's buffer after `head` has exited.
  const files = [...traces, ...traces, ...traces, ...traces].join(' ');
  const r = spawnSync(
    'bash',
    [
      '-o',
      'pipefail',
      '-c',
      `node_modules/.bin/tsx bin/agentctl.ts replay --pretty ${files} | head -1 >/dev/null`,
    ],
    { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
  );
  expect(r.stderr).not.toMatch(/EPIPE|Unhandled/);
  expect(r.status).toBe(0);
});
