/**
 * Where a worker's checkpoint seal key lives when none is named: beside the payload key ring
 * in the user's configuration directory (absolute, so workers started in different directories
 * seal alike), or the legacy ./data/checkpoint.key when one exists there.
 */
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkpointKeyFromEnv, defaultCheckpointKeyFile } from '../../activities/checkpoint-seal';

const fresh = (p: string) => mkdtempSync(join(tmpdir(), p));

function inDir<T>(dir: string, fn: () => T): T {
  const before = process.cwd();
  process.chdir(dir);
  try {
    return fn();
  } finally {
    process.chdir(before);
  }
}

it('defaults to <XDG_CONFIG_HOME>/agent-loop-guard/checkpoint.key, the same from any directory', () => {
  const env = { XDG_CONFIG_HOME: fresh('alg-xdg-') };
  const file = join(env.XDG_CONFIG_HOME, 'agent-loop-guard', 'checkpoint.key');
  const a = inDir(fresh('alg-cwd-a-'), () => checkpointKeyFromEnv(env));
  const b = inDir(fresh('alg-cwd-b-'), () => checkpointKeyFromEnv(env));
  expect(a.equals(b)).toBe(true);
  expect(a.length).toBe(32);
  expect(inDir(fresh('alg-cwd-c-'), () => defaultCheckpointKeyFile(env))).toBe(file);
  expect(statSync(file).mode & 0o777).toBe(0o600);
});

it('keeps using a legacy ./data/checkpoint.key where one exists', () => {
  const cwd = fresh('alg-legacy-');
  const key = Buffer.alloc(32, 7);
  mkdirSync(join(cwd, 'data'));
  writeFileSync(join(cwd, 'data', 'checkpoint.key'), key.toString('base64') + '\n', { mode: 0o600 });
  const env = { XDG_CONFIG_HOME: fresh('alg-xdg-') };
  expect(inDir(cwd, () => checkpointKeyFromEnv(env)).equals(key)).toBe(true);
  expect(readFileSync(join(cwd, 'data', 'checkpoint.key'), 'utf8').trim()).toBe(key.toString('base64'));
});

it('AGENT_CHECKPOINT_KEY_FILE names the file; AGENT_CHECKPOINT_KEY wins over both', () => {
  const named = join(fresh('alg-named-'), 'k');
  const fromFile = checkpointKeyFromEnv({
    AGENT_CHECKPOINT_KEY_FILE: named,
    XDG_CONFIG_HOME: fresh('alg-xdg-'),
  });
  expect(readFileSync(named, 'utf8').trim()).toBe(fromFile.toString('base64'));
  const given = Buffer.alloc(32, 9);
  expect(checkpointKeyFromEnv({ AGENT_CHECKPOINT_KEY: given.toString('base64') }).equals(given)).toBe(true);
});
