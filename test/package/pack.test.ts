/**
 * The package as `npm pack` makes it: built with tsconfig.build.json into a scratch copy
 * of the package (package.json, README, CHANGELOG, LICENSE, bin/, docs/, dist/), so this test
 * never touches the
 * working tree's dist/. The scratch copy sits under node_modules/.cache, where Node and
 * webpack resolve its dependencies from the repository's node_modules as they would in
 * a user's project.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

const ROOT = join(__dirname, '..', '..');
const BIN = (name: string) => join(ROOT, 'node_modules', '.bin', name);

interface PackageJson {
  name: string;
  version: string;
  private?: boolean;
  main: string;
  types: string;
  bin: Record<string, string>;
  exports: Record<string, string | { types: string; default: string }>;
  typesVersions: Record<string, Record<string, string[]>>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;

/** Every file under `dir`, relative to `base`. */
function filesUnder(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name), base) : [relative(base, join(dir, e.name))],
  );
}

/** The package name a bare specifier names (`@scope/name/sub` → `@scope/name`). */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
}

/** What `npm pack --json` says about the tarball. */
interface PackInfo {
  files: { path: string; size: number }[];
  /** The tarball's bytes. */
  size: number;
  unpackedSize: number;
  entryCount: number;
}

/**
 * Upper bounds of the tarball (0.1.0 packs to 757 KB, 2.6 MB unpacked, 490 files): a
 * bound crossed means something was packed that should not be (fixtures, data, a bundle),
 * or the package grew on purpose and the bound moves with a line in CHANGELOG.md.
 */
const MAX_TARBALL_BYTES = 1_200_000;
const MAX_UNPACKED_BYTES = 4_000_000;
const MAX_FILES = 800;

/** Files the package ships besides dist/ and docs/*.md. */
const TOP_FILES = ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'bin/agentctl.js'];

describe('the packed package', () => {
  let dir: string;
  let packed: string[];
  let info: PackInfo;

  beforeAll(() => {
    const cache = join(ROOT, 'node_modules', '.cache');
    mkdirSync(cache, { recursive: true });
    dir = mkdtempSync(join(cache, 'agent-loop-guard-pack-'));
    mkdirSync(join(dir, 'bin'));
    mkdirSync(join(dir, 'docs'));
    const docs = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
    for (const f of [...TOP_FILES, ...docs.map((d) => `docs/${d}`)])
      copyFileSync(join(ROOT, f), join(dir, f));
    execFileSync(BIN('tsc'), ['-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(dir, 'dist')], {
      cwd: ROOT,
      stdio: 'pipe',
    });
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: dir,
      encoding: 'utf8',
    });
    info = (JSON.parse(out) as PackInfo[])[0]!;
    packed = info.files.map((f) => f.path);
  }, 120_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('contains the entry point, its types and the compiled workflows', () => {
    for (const f of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/workflows/index.js',
      'dist/workflows/agent-run.js',
      'dist/guard/index.js',
      'dist/common/contracts.js',
      'dist/client/api.js',
      'dist/client/api.d.ts',
      'bin/agentctl.js',
    ]) {
      expect(packed).toContain(f);
    }
  });

  it('contains no tests, sources, benchmarks, dev scripts or the demo runner', () => {
    // The demo's world, tools and deps stay (agentctl world, npm run worker); its runner does not.
    const strays = packed.filter(
      (p) =>
        /(^|\/)(test|tests|__tests__|fixtures|bench|scripts|examples|data|node_modules)\//.test(p) ||
        /\.(db|db-wal|db-shm|tgz|png|log)$/.test(p) ||
        /^dist\/demo\/(main|runner|scenarios|stack)\./.test(p) ||
        /\.test\.|\.spec\./.test(p) ||
        (p.endsWith('.ts') && !p.endsWith('.d.ts')),
    );
    expect(strays).toEqual([]);
    expect(
      packed.every((p) => p.startsWith('dist/') || /^docs\/[a-z0-9-]+\.md$/.test(p) || TOP_FILES.includes(p)),
    ).toBe(true);
  });

  it('ships its changelog and licence, and stays within its size bounds', () => {
    for (const f of ['CHANGELOG.md', 'LICENSE']) expect(packed).toContain(f);
    expect(readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8')).toContain(`## [${pkg.version}]`);
    expect(info.size).toBeLessThan(MAX_TARBALL_BYTES);
    expect(info.unpackedSize).toBeLessThan(MAX_UNPACKED_BYTES);
    expect(info.entryCount).toBeLessThan(MAX_FILES);
    // The bound is not vacuous: the compiled package is most of it.
    expect(info.unpackedSize).toBeGreaterThan(MAX_UNPACKED_BYTES / 10);
  });

  it('passes npm publish --dry-run with no warning but the login one', () => {
    expect(pkg.private).toBeUndefined();
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+$/);
    // A registry that does not answer: a dry run reads nothing from it, and nothing leaves the machine.
    const r = spawnSync(
      'npm',
      [
        'publish',
        '--dry-run',
        '--ignore-scripts',
        '--json',
        '--registry',
        'http://127.0.0.1:9/',
        '--fetch-retries=0',
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(r.stderr).not.toMatch(/npm error/);
    expect(r.status).toBe(0);
    const warnings = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('npm warn') && !/requires you to be logged in/.test(l));
    expect(warnings).toEqual([]);
    const published = (JSON.parse(r.stdout) as Record<string, { name: string; version: string }>)[pkg.name];
    expect(published).toMatchObject({ name: pkg.name, version: pkg.version });
  });

  it('resolves and loads every export by the package name', () => {
    // A file inside the package requires the package by its own name: Node resolves it through
    // `exports` exactly as in a user's project.
    const subpaths = Object.keys(pkg.exports).filter((s) => s !== './package.json');
    expect(subpaths.length).toBeGreaterThan(1);
    const check = join(dir, 'check-exports.js');
    writeFileSync(
      check,
      `const out = {};
for (const sub of ${JSON.stringify(subpaths)}) {
  const id = ${JSON.stringify(pkg.name)} + sub.slice(1);
  out[sub] = { file: require.resolve(id), exports: Object.keys(require(id)).length };
}
console.log(JSON.stringify(out));`,
    );
    const r = spawnSync(process.execPath, [check], { cwd: dir, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const loaded = JSON.parse(r.stdout) as Record<string, { file: string; exports: number }>;
    for (const sub of subpaths) {
      const target = pkg.exports[sub]!;
      const file = typeof target === 'string' ? target : target.default;
      // Real paths: node_modules may be a link (a worktree sharing another checkout's).
      expect(realpathSync(loaded[sub]!.file)).toBe(realpathSync(join(dir, file)));
      expect(loaded[sub]?.exports).toBeGreaterThan(0);
    }
  });

  it('contains every docs/ page the packed README links to', () => {
    const readme = readFileSync(join(__dirname, '../../README.md'), 'utf8');
    const linked = [...readme.matchAll(/\]\((docs\/[a-z0-9-]+\.md)/g)].map((m) => m[1]!);
    expect(linked.length).toBeGreaterThan(0);
    for (const doc of new Set(linked)) expect(packed).toContain(doc);
  });

  it('points main, types, exports, typesVersions and bin at packed files', () => {
    const targets = [pkg.main, pkg.types, ...Object.values(pkg.bin)];
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (subpath === './package.json') continue;
      if (typeof target === 'string') targets.push(target);
      else targets.push(target.types, target.default);
    }
    for (const paths of Object.values(pkg.typesVersions['*'] ?? {})) targets.push(...paths);
    const missing = targets.map((t) => t.replace(/^\.\//, '')).filter((t) => !packed.includes(t));
    expect(missing).toEqual([]);
  });

  it('requires only Node built-ins and declared dependencies at run time', () => {
    const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
    const required = new Map<string, string>();
    for (const f of filesUnder(join(dir, 'dist')).filter((p) => p.endsWith('.js'))) {
      const code = readFileSync(join(dir, 'dist', f), 'utf8');
      for (const m of code.matchAll(/\brequire\("([^"./][^"]*)"\)/g)) {
        const spec = m[1] as string;
        if (!builtins.has(spec) && !builtins.has(spec.split('/')[0] as string))
          required.set(packageOf(spec), f);
      }
    }
    // Not even the optional peers: those are loaded on use (common/optional-dep.ts), never at load.
    const undeclared = [...required].filter(([name]) => !(name in pkg.dependencies));
    expect(undeclared).toEqual([]);
    // The check sees what it should: the worker's runtime is among them.
    expect(required.has('@temporalio/worker')).toBe(true);
  });

  it('loads, and runs agentctl, with none of the optional peers installed', () => {
    // Node's own resolver, told that the optional peers (common/optional-dep.ts) are not there.
    const peers = Object.keys(pkg.peerDependencies);
    const hide = join(dir, 'hide-optional-peers.js');
    writeFileSync(
      hide,
      `const Module = require('node:module');
const peers = ${JSON.stringify(peers)};
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (peers.some((p) => request === p || request.startsWith(p + '/'))) {
    const err = new Error("Cannot find module '" + request + "'");
    err.code = 'MODULE_NOT_FOUND';
    throw err;
  }
  return resolve.call(this, request, ...rest);
};
`,
    );
    const script = `
const m = require(${JSON.stringify(join(dir, 'dist', 'index.js'))});
m.openLedger('postgres://u:hunter2@127.0.0.1:1/db').then(
  () => console.log('opened'),
  (e) => console.log(JSON.stringify({ name: e.name, message: e.message, cause: e.cause && e.cause.code })),
);`;
    const node = (args: string[]) =>
      spawnSync(process.execPath, ['-r', hide, ...args], {
        encoding: 'utf8',
        env: { ...process.env, LEDGER_URL: '' },
      });
    const loaded = node(['-e', script]);
    expect(loaded.stderr).toBe('');
    const err = JSON.parse(loaded.stdout) as { name: string; message: string; cause: string };
    expect(err).toMatchObject({ name: 'LedgerConnectionError', cause: 'optional_dependency_missing' });
    expect(err.message).toContain('the PostgreSQL ledger needs the optional package "pg"');
    expect(err.message).not.toContain('hunter2');
    const help = node([join(dir, 'bin', 'agentctl.js'), '--help']);
    expect(help.stderr).toBe('');
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: agentctl');
  });

  it('opens the SQLite ledger from dist with nothing on stderr (no ExperimentalWarning)', () => {
    const file = join(dir, 'ledger.db');
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        `const { openLedger } = require(${JSON.stringify(join(dir, 'dist', 'index.js'))});
openLedger(${JSON.stringify(`sqlite:${file}`)}).then(async (l) => { console.log((await l.list()).length); await l.close(); });`,
      ],
      { encoding: 'utf8', env: { ...process.env, LEDGER_URL: '' } },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('0');
  });

  it('bundles the compiled workflows the worker resolves (WORKFLOWS_PATH)', async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the compiled module, not the source
    const worker = require(join(dir, 'dist', 'worker', 'create-worker.js')) as { WORKFLOWS_PATH: string };
    expect(realpathSync(worker.WORKFLOWS_PATH)).toBe(
      realpathSync(join(dir, 'dist', 'workflows', 'index.js')),
    );
    const noop = (): void => undefined;
    const bundle = await bundleWorkflowCode({
      workflowsPath: worker.WORKFLOWS_PATH,
      logger: { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop },
    });
    expect(bundle.code).toContain('agentRun');
  }, 60_000);

  it('runs agentctl from dist when no sources sit next to it', () => {
    const r = spawnSync(
      process.execPath,
      [join(dir, 'bin', 'agentctl.js'), 'replay', join(ROOT, 'demo', 'scripts', 'research-loop.json')],
      { encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD' });
  });
});
