/**
 * `agentctl init` (issue 38 item 4): writes the app's files and never overwrites one. That the
 * app it writes installs from the packed tarball, typechecks, passes its own `npm test` and
 * runs to COMPLETED is examples/run.sh's "agentctl init" step (a real build, pack and dev server).
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentctl } from './cli-helpers';

describe('agentctl init', () => {
  it('writes an app with a read and a write tool, a worker that names its namespace, and the next commands', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'alg-init-')), 'billing-bot');
    const r = await agentctl(['init', dir, '--package', 'file:../agent-loop-guard.tgz'], {});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/npm run worker/);
    expect(r.stdout).toMatch(/npm start/);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      name: string;
      dependencies: Record<string, string>;
      scripts: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(pkg.name).toBe('billing-bot');
    expect(pkg.dependencies['agent-loop-guard']).toBe('file:../agent-loop-guard.tgz');
    expect(Object.keys(pkg.scripts)).toEqual(['worker', 'start', 'test', 'typecheck']);
    // The app's tests run on Node's own test runner (no framework), Temporal's test environment a devDependency.
    expect(pkg.scripts.test).toBe('tsx --test "src/**/*.test.ts"');
    expect(Object.keys(pkg.devDependencies)).toContain('@temporalio/testing');
    const tools = readFileSync(join(dir, 'src/tools.ts'), 'utf8');
    expect(tools).toMatch(/effect: 'read'/);
    expect(tools).toMatch(/effect: 'write'/);
    expect(tools).toMatch(/operationKey:/);
    // The worker passes the namespace (a worker without it dies: "Namespace is not set on request").
    expect(readFileSync(join(dir, 'src/worker.ts'), 'utf8')).toMatch(
      /createAgentWorker\(\{ connection, namespace, taskQueue: TASK_QUEUE, deps \}\)/,
    );
    // One test file: the app's own tools under startAgentTest, a loop stopped, a write run once, a resume.
    const test = readFileSync(join(dir, 'src/agent.test.ts'), 'utf8');
    expect(test).toMatch(/startAgentTest\(\{ tools \}\)/);
    expect(test).toMatch(/'same_call_repeat'/);
    expect(test).toMatch(/counters\.send_email, 1/);
    expect(test).toMatch(/agent\.resume\(/);
    // The stand-in model is the scripted model of agent-loop-guard/testing, not a copy of it.
    expect(readFileSync(join(dir, 'src/model-server.ts'), 'utf8')).toMatch(
      /import \{ startScriptedModel.*\} from 'agent-loop-guard\/testing'/,
    );
  });

  it('refuses a folder that has one of its files (exit 3) and writes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alg-init-'));
    writeFileSync(join(dir, 'README.md'), 'mine\n');
    const r = await agentctl(['init', dir], {});
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/already has README\.md; nothing was written/);
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toBe('mine\n');
    expect(existsSync(join(dir, 'package.json'))).toBe(false);
  });
});
