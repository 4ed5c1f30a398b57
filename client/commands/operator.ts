/**
 * `agentctl operator keygen`: an operator's Ed25519 key pair. The private key file stays
 * with the operator (AGENT_OPERATOR_KEY_FILE, agentctl signs with it); the printed entry
 * goes into the worker's operators file (AGENT_OPERATORS_FILE) with the operator's roles.
 */
import { writeFileSync } from 'node:fs';
import { Command } from 'commander';
import { generateOperatorKey, readOperatorKey, type OperatorKeyFile } from '../../operators/sign';
import { CliError, Exit, json } from '../format';
import type { Ctx } from './common';

/** The operator key agentctl signs with: `--key FILE`, else AGENT_OPERATOR_KEY_FILE, else none (unsigned). */
export function operatorKeyOf(ctx: Ctx, path?: string): OperatorKeyFile | null {
  const file = path ?? ctx.env.AGENT_OPERATOR_KEY_FILE;
  if (!file) return null;
  try {
    return readOperatorKey(file);
  } catch (err) {
    throw new CliError(Exit.USAGE, (err as Error).message);
  }
}

/** The `operator` command group. */
export function operatorCommand(ctx: Ctx): Command {
  const cmd = new Command('operator').description(
    'Operator identity: keys that sign resume, stop and approvals',
  );
  cmd
    .command('keygen')
    .description('Make an Ed25519 key pair: write the private key file, print the operators-file entry')
    .requiredOption('--id <operator>', 'operator id (what --actor must be when signing)')
    .requiredOption('--out <file>', 'where to write the private key file (mode 0600)')
    .option('--role <role...>', 'roles for the printed entry', ['admin'])
    .option('--json', 'machine-readable output')
    .action((o: { id: string; out: string; role: string[]; json?: boolean }) => {
      const { keyFile, publicKey } = generateOperatorKey(o.id);
      try {
        writeFileSync(o.out, JSON.stringify(keyFile, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
      } catch (err) {
        throw new CliError(Exit.ERROR, `cannot write ${o.out}: ${(err as NodeJS.ErrnoException).code}`);
      }
      const entry = { [o.id]: { publicKey, roles: o.role } };
      if (o.json) ctx.io.out(json({ keyFile: o.out, operators: entry }));
      else
        ctx.io.out(
          `wrote ${o.out} (keep it private; agentctl signs with it: AGENT_OPERATOR_KEY_FILE=${o.out})\n` +
            `add to the worker's operators file (AGENT_OPERATORS_FILE) under "operators":\n` +
            JSON.stringify(entry, null, 2) +
            '\n',
        );
    });
  return cmd;
}
