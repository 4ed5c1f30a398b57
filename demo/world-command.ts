/**
 * `agentctl world …`: the demo world's operator knobs — what a person changes so that a
 * stopped run's precondition really changes (`grant`), and the per-run execution
 * counters the tests and the demo assert on. Works on the local `WORLD_URL` database.
 */
import { Command } from 'commander';
import { formatCounters, json } from '../client/format';
import { readCounters, withWorld } from './world-client';
import type { Ctx } from '../client/commands/common';
import { readWorkerEnv } from '../worker/env';

/** `grant` and `revoke`: the same change of one permission, in opposite directions. */
const PERMISSION_COMMANDS = [
  {
    name: 'grant',
    description: 'Grant a permission (e.g. deploy:billing); a NEEDS_HUMAN run can then be resumed',
    done: 'granted',
  },
  { name: 'revoke', description: 'Revoke a permission', done: 'revoked' },
] as const;

/** The world URL the local demo worker writes to (WORLD_URL / LEDGER_URL defaults). */
function worldUrlOf(env: NodeJS.ProcessEnv): string {
  return readWorkerEnv(env).worldUrl;
}

/** The `world` command group. */
export function worldCommand(ctx: Ctx): Command {
  const url = () => worldUrlOf(ctx.env);
  const world = new Command('world').description(
    'Change or inspect the demo world (WORLD_URL): permissions, documents, execution counters',
  );
  for (const p of PERMISSION_COMMANDS) {
    world
      .command(p.name)
      .description(p.description)
      .argument('<permission>')
      .action(async (permission: string) => {
        await withWorld(url(), (w) => w[p.name](permission));
        ctx.io.out(`${p.done} ${permission}\n`);
      });
  }
  world
    .command('add-doc')
    .description('Add a document to the search index (new external state a stuck research run can find)')
    .argument('<id>')
    .argument('<topic>')
    .argument('<title>')
    .argument('[body]', 'document text', '')
    .action(async (id: string, topic: string, title: string, body: string) => {
      await withWorld(url(), (w) => w.addDoc(id, topic, title, body || title));
      ctx.io.out(`added ${id}\n`);
    });
  world
    .command('counters')
    .description('Real tool executions, by tool, for one run (or all runs)')
    .argument('[id]', 'workflow id')
    .option('--json', 'one JSON object')
    .action(async (id: string | undefined, o: { json?: boolean }) => {
      // The operator named this world: open it (as grant/add-doc do) rather than answer "unknown".
      const counters = await readCounters(url(), id, { open: 'always' });
      ctx.io.out(o.json ? `${json(counters)}\n` : `${formatCounters(counters)}\n`);
    });
  return world;
}
