/**
 * `agentctl world …`: the demo world's operator knobs — what a person changes so that a
 * stopped run's precondition really changes (`grant`), and the per-run execution
 * counters the tests and the demo assert on. Works on the local `WORLD_URL` database.
 */
import { Command } from 'commander';
import { World } from '../../activities/tools/demo/world';
import { CliError, Exit, formatCounters, json } from '../format';
import { worldUrlOf, type Ctx } from './common';

function openWorld(ctx: Ctx): World {
  const url = worldUrlOf(ctx.env);
  try {
    return World.open(url);
  } catch (err) {
    throw new CliError(Exit.ERROR, `cannot open the demo world at ${url}: ${(err as Error).message}`);
  }
}

async function withWorld<T>(ctx: Ctx, fn: (w: World) => Promise<T>): Promise<T> {
  const world = openWorld(ctx);
  try {
    return await fn(world);
  } finally {
    world.close();
  }
}

/** The `world` command group. */
export function worldCommand(ctx: Ctx): Command {
  const world = new Command('world').description(
    'Change or inspect the demo world (WORLD_URL): permissions, documents, execution counters',
  );
  world
    .command('grant')
    .description('Grant a permission (e.g. deploy:billing); a NEEDS_HUMAN run can then be resumed')
    .argument('<permission>')
    .action(async (permission: string) => {
      await withWorld(ctx, (w) => w.grant(permission));
      ctx.io.out(`granted ${permission}\n`);
    });
  world
    .command('revoke')
    .description('Revoke a permission')
    .argument('<permission>')
    .action(async (permission: string) => {
      await withWorld(ctx, (w) => w.revoke(permission));
      ctx.io.out(`revoked ${permission}\n`);
    });
  world
    .command('add-doc')
    .description('Add a document to the search index (new external state a stuck research run can find)')
    .argument('<id>')
    .argument('<topic>')
    .argument('<title>')
    .argument('[body]', 'document text', '')
    .action(async (id: string, topic: string, title: string, body: string) => {
      await withWorld(ctx, (w) => w.addDoc(id, topic, title, body || title));
      ctx.io.out(`added ${id}\n`);
    });
  world
    .command('counters')
    .description('Real tool executions, by tool, for one run (or all runs)')
    .argument('[id]', 'workflow id')
    .option('--json', 'one JSON object')
    .action(async (id: string | undefined, o: { json?: boolean }) => {
      const counters = await withWorld(ctx, (w) => w.counters(id));
      ctx.io.out(o.json ? `${json(counters)}\n` : `${formatCounters(counters) || '(none)'}\n`);
    });
  return world;
}
