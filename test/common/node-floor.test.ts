/**
 * The Node floor (issue 34): package.json engines, common/node-floor.ts and the launchers agree,
 * and below the floor the entry points say so instead of crashing in better-sqlite3 (which
 * segfaults on Node 20). An old Node is simulated by overriding `process.versions.node` in a
 * child process of this Node before the entry point loads.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertNodeFloor, NODE_FLOOR_MAJOR, nodeFloorProblem } from '../../common/node-floor';
import { SqliteLedger } from '../../storage/ledger/sqlite-ledger';

const ROOT = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };

/** Runs `script` in a Node that reports `version` as its own. */
function asNode(version: string, script: string): { status: number | null; stderr: string; stdout: string } {
  const fake = `Object.defineProperty(process.versions, 'node', { value: ${JSON.stringify(version)} });`;
  const r = spawnSync(process.execPath, ['-e', `${fake}\n${script}`], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

describe('the Node floor', () => {
  it('is the one package.json declares', () => {
    expect(pkg.engines.node).toBe(`>=${NODE_FLOOR_MAJOR}`);
    expect(readFileSync(join(ROOT, 'bin', 'agentctl.js'), 'utf8')).toContain(
      `NODE_FLOOR_MAJOR = ${NODE_FLOOR_MAJOR};`,
    );
  });

  it('names the floor and the running version below it, and nothing at or above it', () => {
    expect(nodeFloorProblem('20.20.2')).toBe('agent-loop-guard needs Node 22 or newer (this is v20.20.2)');
    expect(nodeFloorProblem('v18.0.0')).toBe('agent-loop-guard needs Node 22 or newer (this is v18.0.0)');
    expect(nodeFloorProblem('22.0.0')).toBeUndefined();
    expect(nodeFloorProblem('24.21.0')).toBeUndefined();
    expect(() => assertNodeFloor()).not.toThrow(); // this test runs on a supported Node
  });

  it('agentctl says so on an old Node and exits 1 before loading anything', () => {
    const r = asNode('20.20.2', "require('./bin/agentctl.js')");
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe('agent-loop-guard needs Node 22 or newer (this is v20.20.2)');
  });

  it('the worker binary says so on an old Node and exits 1', () => {
    const r = asNode('20.20.2', "require('tsx/cjs'); require('./worker/main.ts')");
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe('agent-loop-guard needs Node 22 or newer (this is v20.20.2)');
  });

  it.each(['demo/main.ts', 'demo/worker.ts'])(
    'the quick start entry point %s says so on an old Node and exits 1',
    (entry) => {
      const r = asNode('20.20.2', `require('tsx/cjs'); require('./${entry}')`);
      expect(r.status).toBe(1);
      expect(r.stderr.trim()).toBe('agent-loop-guard needs Node 22 or newer (this is v20.20.2)');
    },
  );

  it('the SQLite ledger throws the message instead of opening better-sqlite3', async () => {
    const r = asNode(
      '20.20.2',
      "require('tsx/cjs'); const { SqliteLedger } = require('./storage/ledger/sqlite-ledger.ts');" +
        "try { new SqliteLedger(':memory:'); console.log('opened') } catch (e) { console.log(e.message) }",
    );
    expect(r.stdout.trim()).toBe('agent-loop-guard needs Node 22 or newer (this is v20.20.2)');
    expect(r.status).toBe(0);
    const ledger = new SqliteLedger(':memory:'); // and opens on this Node
    await ledger.close();
  });
});
