/**
 * `agentctl console`: an approvals inbox in the browser (client/console/, docs/cli.md). It
 * serves a small page on loopback (TLS required anywhere else) with a random token, lists the
 * runs that wait for a person and acts on them with the operator key it was started with
 * (`--key` / AGENT_OPERATOR_KEY_FILE), signed as `agentctl approvals|resume|stop` sign.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { checkArgDisplay, type ArgDisplayHints } from '../../tools/arg-display';
import { OperatorRegistry } from '../../operators/registry';
import { readOperatorKey, type OperatorKeyFile } from '../../operators/sign';
import type { ConsoleOperator } from '../console/actions';
import {
  checkBind,
  DEFAULT_CONSOLE_PORT,
  startConsoleServer,
  type ConsoleServerHandle,
} from '../console/server';
import { CliError, Exit } from '../format';
import { defaultActor, nonNegativeInt, runLink, type Ctx } from './common';

/** Options of the command. */
export interface ConsoleOpts {
  port: number;
  host: string;
  key?: string;
  tlsCert?: string;
  tlsKey?: string;
  origin?: string[];
  taskQueue?: string;
  display?: string;
  quiet?: boolean;
}

/** `--display FILE`: `{ tool: { arg: { unit, scale? } } }` (tools/arg-display.ts); a bad file is exit 2 naming it. */
export function readDisplayFile(file: string): Record<string, ArgDisplayHints> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (err) {
    throw new CliError(Exit.USAGE, `console: --display ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new CliError(
      Exit.USAGE,
      `console: --display ${file}: expected { "tool": { "arg": { "unit", "scale" } } }`,
    );
  const out: Record<string, ArgDisplayHints> = {};
  for (const [tool, hints] of Object.entries(raw as Record<string, unknown>)) {
    try {
      out[tool] = checkArgDisplay(tool, hints);
    } catch (err) {
      throw new CliError(Exit.USAGE, `console: --display ${file}: ${(err as Error).message}`, { cause: err });
    }
  }
  return out;
}

/** Who acts: the key's operator, or unsigned as $AGENTCTL_ACTOR / $USER; a bad file is exit 2. */
export function consoleOperatorOf(ctx: Ctx, keyPath: string | undefined): ConsoleOperator {
  const path = keyPath ?? (ctx.env.AGENT_OPERATOR_KEY_FILE || undefined);
  let key: OperatorKeyFile | null = null;
  let operators: OperatorRegistry;
  try {
    if (path) key = readOperatorKey(path);
    operators = OperatorRegistry.fromEnv(ctx.env);
  } catch (err) {
    throw new CliError(Exit.USAGE, `console: ${(err as Error).message}`, { cause: err });
  }
  return { key, actor: key?.operator ?? defaultActor(ctx.env), operators, env: ctx.env };
}

/**
 * Starts the console from the command's options and environment (exported for tests): refuses
 * a non-loopback host without TLS, half a TLS pair and a bad key file (exit 2) before it connects.
 */
export async function startConsoleCommand(ctx: Ctx, o: ConsoleOpts): Promise<ConsoleServerHandle> {
  if ((o.tlsCert === undefined) !== (o.tlsKey === undefined))
    throw new CliError(Exit.USAGE, 'console: --tls-cert and --tls-key go together');
  const operator = consoleOperatorOf(ctx, o.key);
  const display = o.display ? readDisplayFile(o.display) : undefined;
  const tls = o.tlsCert && o.tlsKey ? { certFile: o.tlsCert, keyFile: o.tlsKey } : undefined;
  // Checked again by the server; here so that a refused start does not first wait for Temporal.
  checkBind(o.host, tls !== undefined);
  const c = await ctx.connect();
  const server = await startConsoleServer({
    client: c.client,
    operator,
    linkOf: (id) => runLink(ctx, c, id),
    host: o.host,
    port: o.port,
    ...(tls ? { tls } : {}),
    ...(o.origin?.length ? { origins: o.origin } : {}),
    ...(o.taskQueue ? { taskQueue: o.taskQueue } : {}),
    ...(display ? { display } : {}),
    onRotate: (url: string) =>
      ctx.io.out(`console: a new token (a page took the last one, or it was rotated): ${url}\n`),
    ...(o.quiet ? {} : { log: (line: string) => ctx.io.err(`console: ${line}\n`) }),
  });
  ctx.io.out(
    [
      `approvals inbox on ${server.base} (Temporal ${c.address}, namespace ${c.namespace}${o.taskQueue ? `, task queue ${o.taskQueue}` : ''})`,
      `  open: ${server.url}`,
      `  acting as ${operator.actor}${operator.key ? ' (signed with the operator key)' : ' (unsigned: only workers in open mode accept it)'}`,
      `  origins: ${server.origins.join(', ')}`,
      '  whoever has the token acts as you: a page trades it once for an HttpOnly cookie (then a new URL is printed);',
      '  a new token: POST /api/token (the page\'s "new token" button); stop with Ctrl-C',
      '',
    ].join('\n'),
  );
  return server;
}

/** The `console` command. */
export function consoleCommand(ctx: Ctx): Command {
  return new Command('console')
    .description('Approvals inbox in the browser: runs waiting for a person; approve, deny, resume, stop')
    .option('--port <port>', 'port (0 picks a free one)', nonNegativeInt, DEFAULT_CONSOLE_PORT)
    .option('--host <host>', 'bind address; anything but loopback needs --tls-cert/--tls-key', '127.0.0.1')
    .option('--key <file>', 'operator key file every action is signed with (default AGENT_OPERATOR_KEY_FILE)')
    .option('--tls-cert <file>', 'PEM certificate: serve HTTPS (required off loopback)')
    .option('--tls-key <file>', 'PEM private key of --tls-cert')
    .option(
      '--origin <url>',
      "another origin allowed to call it besides its own (a proxy's), repeatable",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option(
      '--task-queue <name>',
      'only runs on this task queue (default: every task queue of the namespace)',
    )
    .option(
      '--display <file>',
      'JSON {tool: {arg: {unit, scale}}}: show those args in their units (e.g. cents as EUR)',
    )
    .option('--quiet', 'no log line per action or refused request')
    .action(async (o: ConsoleOpts) => {
      const server = await startConsoleCommand(ctx, o);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.close();
    });
}
