/**
 * The Node floor (22.13, the first Node 22 with an unflagged `node:sqlite`): package.json
 * engines, common/node-floor.ts and the launchers agree, and below the floor the entry points
 * say so with the one command that runs the same thing on npm's Node 22, instead of failing
 * inside. An old Node is simulated by overriding `process.versions.node` in a child process of
 * this Node before the entry point loads.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  assertNodeFloor,
  currentCommand,
  NODE_FLOOR,
  NODE_FLOOR_MAJOR,
  NODE_FLOOR_MINOR,
  nodeFloorProblem,
} from '../../common/node-floor';
import { SqliteLedger } from '../../storage/ledger/sqlite-ledger';

const ROOT = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };

/** No npm script around the child: the remedy then names the command itself. */
const NO_NPM = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('npm_')));

/**
 * Runs `script` in a Node that reports `version` as its own, as if started as `node ...argv`
 * (`argv[0]` the file).
 */
function asNode(
  version: string,
  script: string,
  argv: string[] = ['[eval]'],
  env: NodeJS.ProcessEnv = NO_NPM,
): { status: number | null; stderr: string; stdout: string } {
  const fake =
    `Object.defineProperty(process.versions, 'node', { value: ${JSON.stringify(version)} });` +
    `process.argv.splice(1, Infinity, ...${JSON.stringify(argv)});`;
  const r = spawnSync(process.execPath, ['-e', `${fake}\n${script}`], {
    cwd: ROOT,
    encoding: 'utf8',
    env,
    timeout: 30_000,
  });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

/** The message below the floor, for `command`. */
const below = (version: string, command: string) =>
  `agent-loop-guard needs Node 22.13 or newer (this is v${version}). ` +
  `Run it on Node 22 from npm: npx -p node@22 -- ${command}`;

describe('the Node floor', () => {
  it('is the one package.json declares, and the one node:sqlite needs unflagged', () => {
    expect(pkg.engines.node).toBe(`>=${NODE_FLOOR}`);
    expect([NODE_FLOOR_MAJOR, NODE_FLOOR_MINOR]).toEqual([22, 13]);
  });

  it('names the floor, the running version below it and the npx remedy, and nothing at or above it', () => {
    expect(nodeFloorProblem('20.20.2', 'npm run demo')).toBe(below('20.20.2', 'npm run demo'));
    expect(nodeFloorProblem('v18.0.0', 'agentctl status')).toBe(below('18.0.0', 'agentctl status'));
    expect(nodeFloorProblem('22.12.0', 'npm ci')).toBe(below('22.12.0', 'npm ci'));
    expect(nodeFloorProblem('22.13.0')).toBeUndefined();
    expect(nodeFloorProblem('22.23.3')).toBeUndefined();
    expect(nodeFloorProblem('24.21.0')).toBeUndefined();
    expect(() => assertNodeFloor()).not.toThrow(); // this test runs on a supported Node
  });

  it('the remedy repeats the command the user ran: an npm script with its arguments, a binary, a file', () => {
    const npm = (event: string, script: string) => ({
      npm_lifecycle_event: event,
      npm_lifecycle_script: script,
      npm_command: 'run-script',
    });
    const node = process.execPath;
    const demo = npm('demo', 'tsx demo/main.ts');
    expect(currentCommand(undefined, [node, `${ROOT}/demo/main.ts`, '--once'], demo)).toBe(
      'npm run demo -- --once',
    );
    expect(currentCommand(undefined, [node, `${ROOT}/demo/main.ts`], demo)).toBe('npm run demo');
    // The script's own arguments are not the user's.
    const own = npm('worker', 'tsx demo/worker.ts --quiet');
    expect(currentCommand(undefined, [node, `${ROOT}/demo/worker.ts`, '--quiet', 'x y'], own)).toBe(
      "npm run worker -- 'x y'",
    );
    expect(currentCommand(undefined, [node, '/x/jest.js'], npm('test', 'jest'))).toBe('npm test');
    // npx is no npm script: the binary is named.
    const npx = { npm_lifecycle_event: 'npx', npm_command: 'exec' };
    expect(currentCommand('agentctl', [node, '/x/agentctl.js', 'status', 'r-1'], npx)).toBe(
      'agentctl status r-1',
    );
    expect(currentCommand(undefined, [node, `${process.cwd()}/dist/worker/main.js`], {})).toBe(
      'node dist/worker/main.js',
    );
    expect(currentCommand(undefined, [node, '/x/main.ts'], {})).toBe('<your command>');
  });

  it('agentctl says so on an old Node and exits 1 before loading anything', () => {
    const r = asNode('20.20.2', "require('./bin/agentctl.js')", [`${ROOT}/bin/agentctl.js`, 'status', 'r-1']);
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe(below('20.20.2', 'agentctl status r-1'));
  });

  it('agentctl run through npm names the npm script', () => {
    const argv = [`${ROOT}/bin/agentctl.ts`, 'ledger', 'list'];
    const r = asNode('20.20.2', "require('tsx/cjs'); require('./bin/agentctl.ts')", argv, {
      ...NO_NPM,
      npm_lifecycle_event: 'agentctl',
      npm_lifecycle_script: 'tsx bin/agentctl.ts',
      npm_command: 'run-script',
    });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe(below('20.20.2', 'npm run agentctl -- ledger list'));
  });

  it('the worker binary says so on an old Node and exits 1', () => {
    const r = asNode('20.20.2', "require('tsx/cjs'); require('./worker/main.ts')");
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe(below('20.20.2', '<your command>'));
  });

  it.each(['demo/main.ts', 'demo/worker.ts'])(
    'the quick start entry point %s says so on an old Node and exits 1',
    (entry) => {
      const script = entry === 'demo/main.ts' ? 'demo' : 'worker';
      const r = asNode('20.20.2', `require('tsx/cjs'); require('./${entry}')`, [`${ROOT}/${entry}`], {
        ...NO_NPM,
        npm_lifecycle_event: script,
        npm_lifecycle_script: `tsx ${entry}`,
        npm_command: 'run-script',
      });
      expect(r.status).toBe(1);
      expect(r.stderr.trim()).toBe(below('20.20.2', `npm run ${script}`));
    },
  );

  it('the SQLite ledger throws the message instead of opening the database', async () => {
    const r = asNode(
      '20.20.2',
      "require('tsx/cjs'); const { SqliteLedger } = require('./storage/ledger/sqlite-ledger.ts');" +
        "try { new SqliteLedger(':memory:'); console.log('opened') } catch (e) { console.log(e.message) }",
    );
    expect(r.stdout.trim()).toBe(below('20.20.2', '<your command>'));
    expect(r.status).toBe(0);
    const ledger = new SqliteLedger(':memory:'); // and opens on this Node
    await ledger.close();
  });
});
