/**
 * `agentctl init [dir]`: writes a working app on the installed package —
 * one read tool, one write tool, a worker, a run starter, a local stand-in model, a test — into `dir`
 * (default the current folder). It never overwrites: a file that already exists stops it
 * (exit 3) before anything is written. docs/own-agent.md walks through what it writes.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { Command } from 'commander';
import { CliError, Exit } from '../format';
import type { Ctx } from './common';
import { initFiles, type InitValues } from './init-templates';

/** The package's own package.json (source: ../../package.json; built: ../../../package.json). */
function ownPackage(): {
  version: string;
  dependencies: Record<string, string>;
  optional: Record<string, string>;
  dev: Record<string, string>;
} {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as {
      name?: string;
      version: string;
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    if (pkg.name !== 'agent-loop-guard') continue;
    return {
      version: pkg.version,
      dependencies: pkg.dependencies ?? {},
      optional: { ...pkg.peerDependencies, ...pkg.optionalDependencies },
      dev: pkg.devDependencies ?? {},
    };
  }
  throw new CliError(Exit.ERROR, 'cannot find the agent-loop-guard package.json');
}

/** An npm package name from a folder name: lower case, letters, digits, `-`, `.`, `_`. */
function packageNameOf(dir: string): string {
  const name = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+/, '');
  return name || 'my-agent';
}

/** The `init` command. */
export function initCommand(ctx: Ctx): Command {
  return new Command('init')
    .description(
      'Write a working agent app into DIR: two tools (a read and a write), a worker, a run starter, a local stand-in model, a test',
    )
    .argument('[dir]', 'where to write it (created if missing)', '.')
    .option(
      '--package <spec>',
      'what the app depends on for agent-loop-guard (default ^VERSION of this agentctl; e.g. file:../agent-loop-guard.tgz)',
    )
    .option('--task-queue <queue>', "the worker's task queue", 'my-agent')
    .action((dirArg: string, o: { package?: string; taskQueue: string }) => {
      const dir = resolve(dirArg);
      const own = ownPackage();
      const pick = (range: string | undefined, what: string) => {
        if (!range) throw new CliError(Exit.ERROR, `no version of ${what} in the package`);
        return range;
      };
      const values: InitValues = {
        name: packageNameOf(dir),
        packageSpec: o.package ?? `^${own.version}`,
        taskQueue: o.taskQueue,
        versions: {
          worker: pick(own.dependencies['@temporalio/worker'], '@temporalio/worker'),
          testing: pick(own.optional['@temporalio/testing'], '@temporalio/testing'),
          zod: pick(own.dependencies.zod, 'zod'),
          openai: pick(own.optional.openai, 'openai'),
          tsx: pick(own.dev.tsx, 'tsx'),
          typescript: pick(own.dev.typescript, 'typescript'),
          types: pick(own.dev['@types/node'], '@types/node'),
        },
      };
      const files = initFiles(values);
      const taken = Object.keys(files).filter((f) => existsSync(join(dir, f)));
      if (taken.length > 0)
        throw new CliError(
          Exit.REFUSED,
          `${dir} already has ${taken.join(', ')}; nothing was written (choose an empty folder)`,
        );
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), text, { flag: 'wx' });
      }
      const cd = relative(process.cwd(), dir);
      ctx.io.out(
        `wrote ${Object.keys(files).join(', ')} in ${dir}\n\n` +
          `next:\n` +
          (cd ? `  cd ${cd}\n` : '') +
          `  npm install\n` +
          `  npm run worker    # terminal 1 (a Temporal server on localhost:7233, else TEMPORAL_ADDRESS)\n` +
          `  npm start         # terminal 2: one run, COMPLETED when the model calls complete_task\n` +
          `  npm test          # the agent's tests (src/agent.test.ts): a scripted model, the Temporal CLI or TEMPORAL_TEST_ADDRESS\n`,
      );
    });
}
