/**
 * agentctl — the operator CLI of agent-loop-guard (docs/cli.md).
 *
 *   start · status · report · tree · trace · watch · list · resume · stop · send · replies · ledger · approvals ·
 *   spend · console · init ·
 *   world · replay
 *
 * Exit codes: 0 ok · 1 error · 2 usage / malformed input · 3 refused / not resumable ·
 * 4 Temporal server unreachable · 5 payload codec mismatch between agentctl and the run's worker ·
 * 6 no worker polls the run's task queue.
 */
import { Command, CommanderError } from 'commander';
import { runReplay } from './replay';
import { codecServerCommand } from './commands/codec-server';
import { consoleCommand } from './commands/console';
import { makeCtx, type Ctx } from './commands/common';
import { resumeCommand, stopCommand } from './commands/control';
import { listCommand, reportCommand, traceCommand, treeCommand, watchCommand } from './commands/inspect';
import { statusCommand } from './commands/status';
import { approvalsCommand } from './commands/approvals';
import { ledgerCommand } from './commands/ledger';
import { conversationCommand } from './commands/conversation';
import { repliesCommand, sendCommand } from './commands/send';
import { initCommand } from './commands/init';
import { operatorCommand } from './commands/operator';
import { startCommand } from './commands/start';
import { spendCommand } from './commands/spend';
import { connectionSettings, unreachableMessage } from './connect';
import { CliError, Exit, stdio, type Output } from './format';
import { codecMismatch, payloadDecodeFailure, PayloadCodecMismatchError } from '../codec/mismatch';
import { NotAGuardedRunError } from './engine';

const EXIT_HELP = `
Exit codes:
  0  ok
  1  error (run failed to answer, not found, unexpected failure)
  2  usage error or malformed input (bad flag, bad script/replay file, bad environment)
  3  refused / not resumable (resume refused by the workflow, run closed)
  4  Temporal server unreachable (start it with \`npm run dev:server\`)
  5  payload codec mismatch: agentctl and the run's worker do not share a key, or one has
     AGENT_CODEC=off (a configuration error, not a refusal; the message names the fix)
  6  no worker polls the run's task queue: nothing was sent (status prints what the server
     knows of the run); the message names the queue and how to start a worker

Connection: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE
(the Temporal CLI's variables); task queue: TEMPORAL_TASK_QUEUE; counters: WORLD_URL.
Docs: docs/cli.md`;

function applyOutput(cmd: Command, io: Output): void {
  cmd.exitOverride();
  cmd.configureOutput({ writeOut: io.out, writeErr: io.err });
  cmd.showHelpAfterError('(run with --help for usage)');
  for (const sub of cmd.commands) applyOutput(sub, io);
}

/** A command group an entry point adds beside the product's own (the demo's `world`, bin/agentctl.ts). */
export type CommandFactory = (ctx: Ctx) => Command;

/** Builds the program (exported for tests), with the `extra` command groups after the product's. */
export function buildProgram(
  ctx: ReturnType<typeof makeCtx>,
  extra: readonly CommandFactory[] = [],
): Command {
  const program = new Command('agentctl')
    .description('Operate durable, loop-guarded agent runs on Temporal')
    .addHelpText('after', EXIT_HELP);
  program.addCommand(startCommand(ctx));
  program.addCommand(statusCommand(ctx));
  program.addCommand(reportCommand(ctx));
  program.addCommand(treeCommand(ctx));
  program.addCommand(traceCommand(ctx));
  program.addCommand(watchCommand(ctx));
  program.addCommand(listCommand(ctx));
  program.addCommand(resumeCommand(ctx));
  program.addCommand(stopCommand(ctx));
  program.addCommand(ledgerCommand(ctx));
  program.addCommand(conversationCommand(ctx));
  program.addCommand(sendCommand(ctx));
  program.addCommand(repliesCommand(ctx));
  program.addCommand(approvalsCommand(ctx));
  program.addCommand(spendCommand(ctx));
  program.addCommand(consoleCommand(ctx));
  program.addCommand(initCommand(ctx));
  for (const make of extra) program.addCommand(make(ctx));
  program.addCommand(codecServerCommand(ctx));
  program.addCommand(operatorCommand(ctx));
  program.addCommand(
    new Command('replay')
      .description('Offline replay of docs/spec.md §6 files: one JSON object per file (no server needed)')
      .argument('<files...>', 'replay-format JSON files')
      .option('--pretty', 'indent the JSON')
      .option(
        '--profile <name>',
        'decide at a guard profile: llm (a fresh LLM run of this version), coding (an LLM coding agent) or default',
      )
      .action((files: string[], o: { pretty?: boolean; profile?: string }) => {
        const code = runReplay(
          files,
          (l) => ctx.io.out(`${l}\n`),
          (l) => ctx.io.err(`${l}\n`),
          { pretty: o.pretty, ...(o.profile === undefined ? {} : { profile: o.profile }) },
        );
        if (code !== 0)
          throw new CliError(code === 2 ? Exit.USAGE : Exit.ERROR, 'replay failed', { reported: true });
      }),
  );
  applyOutput(program, ctx.io);
  return program;
}

function isUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; cause?: unknown } | null;
  if (!e) return false;
  if (e.code === 14) return true; // gRPC UNAVAILABLE
  if (
    typeof e.message === 'string' &&
    /UNAVAILABLE|ECONNREFUSED|failed to connect|transport error/i.test(e.message)
  )
    return true;
  return e.cause !== undefined && e.cause !== err && isUnavailable(e.cause);
}

/** Runs agentctl with `argv` (without node and script); resolves to the exit code. */
export async function main(
  argv: readonly string[],
  o: { env?: NodeJS.ProcessEnv; io?: Output; commands?: readonly CommandFactory[] } = {},
): Promise<number> {
  const io = o.io ?? stdio;
  const ctx = makeCtx({ env: o.env, io });
  const program = buildProgram(ctx, o.commands);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return Exit.OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0)
        return Exit.OK;
      return Exit.USAGE; // commander already printed the message
    }
    if (err instanceof CliError) {
      if (!err.reported) io.err(`agentctl: ${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof NotAGuardedRunError) {
      io.err(`agentctl: ${err.message}\n`);
      return Exit.USAGE;
    }
    if (err instanceof PayloadCodecMismatchError) {
      io.err(`agentctl: ${err.message}\n`);
      return Exit.CODEC_MISMATCH;
    }
    // Any other payload this agentctl could not decode (status, report, …): its key is not the worker's.
    const undecodable = payloadDecodeFailure(err);
    if (undecodable !== null) {
      io.err(
        `agentctl: ${codecMismatch('client', undecodable, { encrypts: true }, 'nothing was changed').message}\n`,
      );
      return Exit.CODEC_MISMATCH;
    }
    if (isUnavailable(err)) {
      let address = '(unknown address)';
      try {
        address = connectionSettings(ctx.env).options.address;
      } catch {
        // The settings were fine when we connected; keep the placeholder.
      }
      io.err(
        `agentctl: ${unreachableMessage(address, (err as Error).message.split('\n')[0] ?? 'unavailable')}\n`,
      );
      return Exit.UNREACHABLE;
    }
    io.err(`agentctl: ${err instanceof Error ? err.message : String(err)}\n`);
    if (ctx.env.AGENTCTL_DEBUG && err instanceof Error && err.stack) io.err(`${err.stack}\n`);
    return Exit.ERROR;
  } finally {
    await ctx.close().catch(() => undefined);
  }
}

/** Runs with process.argv and sets process.exitCode (bin/agentctl.ts: bin/agentctl.js, `npm run agentctl`). */
export function cli(
  argv: readonly string[] = process.argv.slice(2),
  commands: readonly CommandFactory[] = [],
): Promise<void> {
  return main(argv, { commands }).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`agentctl: ${String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
