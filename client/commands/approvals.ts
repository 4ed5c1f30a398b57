/**
 * `agentctl approvals list|approve|deny`: a person's decision on a call that needs approval
 * (docs/security.md "Approvals"). A run that stopped NEEDS_HUMAN `approval_required` shows
 * the exact call; `approve` binds an approval to that run, its CURRENT stop and that call's
 * digest (SHA-256 of the tool and its canonical args, read from the run's checkpoint, never
 * typed by the operator; `--digest` checks it is the one the operator saw), usable once
 * before its TTL; `deny` records a denial and the run stays stopped. Every decision lands in
 * the append-only audit in the ledger's database (LEDGER_URL).
 *
 * With an operator key (`--key` / AGENT_OPERATOR_KEY_FILE) the decision is signed: the
 * signature covers the row id, the run, the actor (the key's operator), the reason, the call's
 * digest, the stop and the expiry, and a worker with an operators file uses only
 * approvals whose signature verifies (storage/approvals/verify.ts).
 *
 * The rules live in client/approvals.ts (the package's approval API); this file parses the
 * options and prints.
 */
import { Command } from 'commander';
import { DEFAULT_APPROVAL_TTL_MS, parseTtl, type ApprovalRecord } from '../../storage/approvals';
import type { Client } from '@temporalio/client';
import {
  approveRun,
  denyRun,
  getPendingApproval,
  listApprovals,
  listPendingApprovals,
  type ApprovalStoreOptions,
  type DecideOptions,
} from '../approvals';
import { CliError, Exit, json, keyValues, table } from '../format';
import type { Ctx } from './common';

/** Where the store is and whom the workers trust: from agentctl's environment. */
const storeOf = (ctx: Ctx): ApprovalStoreOptions => ({ env: ctx.env });

/**
 * Who decides and why: `--key` (else AGENT_OPERATOR_KEY_FILE) signs; `--actor` (else the key's
 * operator, else $AGENTCTL_ACTOR / $USER) must be the key's operator when there is one.
 */
function deciderOf(ctx: Ctx, o: { actor?: string; key?: string; reason: string }): DecideOptions {
  return {
    ...storeOf(ctx),
    reason: o.reason,
    ...(o.key === undefined ? {} : { key: o.key }),
    ...(o.actor === undefined ? {} : { actor: o.actor }),
  };
}

/**
 * `--digest`: the call the operator checked. The run's current stop and call, with the digest
 * required to equal it, become the decision's expected stop (refused, exit 3, when it moved on).
 */
async function expectedDigest(
  client: Client,
  runId: string,
  digest: string | undefined,
): Promise<Pick<DecideOptions, 'expectedStop'>> {
  if (digest === undefined) return {};
  if (!/^sha256:[0-9a-f]{64}$/.test(digest))
    throw new CliError(
      Exit.USAGE,
      `--digest: expected sha256:<64 lowercase hex>, got ${JSON.stringify(digest.slice(0, 80))}`,
    );
  const now = await getPendingApproval(client, runId);
  return { expectedStop: { stopRef: now.stopRef, fingerprint: now.fingerprint, argsDigest: digest } };
}

function ttlOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_APPROVAL_TTL_MS;
  try {
    return parseTtl(value);
  } catch (err) {
    throw new CliError(Exit.USAGE, `--ttl: ${(err as Error).message}`, { cause: err });
  }
}

const approvalColumns = [
  { header: 'ID', value: (a: ApprovalRecord) => a.id, max: 44 },
  { header: 'RUN', value: (a: ApprovalRecord) => a.runId, max: 40 },
  { header: 'STATE', value: (a: ApprovalRecord) => a.state },
  { header: 'TOOL', value: (a: ApprovalRecord) => a.tool, max: 40 },
  { header: 'DIGEST', value: (a: ApprovalRecord) => a.argsHash ?? '(none: authorises nothing)', max: 71 },
  { header: 'STOP', value: (a: ApprovalRecord) => a.stopRef },
  { header: 'BY', value: (a: ApprovalRecord) => a.approver },
  { header: 'EXPIRES', value: (a: ApprovalRecord) => (a.deniedAt ? '-' : a.expiresAt) },
];

/** Builds the `approvals` command: list, approve, deny. */
export function approvalsCommand(ctx: Ctx): Command {
  const cmd = new Command('approvals').description(
    'Approve or deny calls that need a person (runs stopped NEEDS_HUMAN approval_required)',
  );

  cmd
    .command('list')
    .description('Runs waiting for an approval (the exact call) and the stored approvals with their state')
    .option('--run <id>', 'only this run')
    .option('--json', 'machine-readable output ({pending, approvals})')
    .action(async (o: { run?: string; json?: boolean }) => {
      const c = await ctx.connect();
      const pending = await listPendingApprovals(c.client, o.run ? { runId: o.run } : {});
      const approvals = await listApprovals({ ...storeOf(ctx), ...(o.run ? { runId: o.run } : {}) });
      if (o.json) {
        ctx.io.out(json({ pending, approvals }));
        return;
      }
      ctx.io.out(
        pending.length === 0
          ? 'no run is waiting for an approval\n'
          : `waiting for an approval:\n${table(pending, [
              { header: 'RUN', value: (p) => p.runId, max: 40 },
              { header: 'STOP', value: (p) => p.stopRef },
              { header: 'TOOL', value: (p) => p.tool, max: 40 },
              { header: 'DIGEST', value: (p) => p.argsDigest ?? '(none: cannot be approved)', max: 71 },
              { header: 'ARGS', value: (p) => JSON.stringify(p.args), max: 80 },
            ])}`,
      );
      ctx.io.out(
        approvals.length === 0
          ? 'no stored approvals\n'
          : `\napprovals:\n${table(approvals, approvalColumns)}`,
      );
    });

  cmd
    .command('approve')
    .description("Approve the call a run is stopped on (bound to the run's current stop and that call)")
    .argument('<runId>', 'workflow id of the stopped run')
    .option('--actor <name>', 'who approves (default $AGENTCTL_ACTOR / $USER; stored and audited)')
    .requiredOption('--reason <text>', 'why: what was checked (stored and audited)')
    .option('--ttl <duration>', 'how long the approval stays usable: 90s, 15m, 1h (default 15m, at most 7d)')
    .option('--key <file>', 'operator key file to sign with (default AGENT_OPERATOR_KEY_FILE)')
    .option('--resume', 'also resume the run (it re-verifies the approval, then runs the call once)')
    .option(
      '--digest <sha256>',
      "the call's digest you checked (from `approvals list`): refused unless the run still waits on exactly that call",
    )
    .option('--json', 'machine-readable output')
    .action(
      async (
        runId: string,
        o: {
          actor?: string;
          key?: string;
          reason: string;
          ttl?: string;
          resume?: boolean;
          digest?: string;
          json?: boolean;
        },
      ) => {
        const ttlMs = ttlOf(o.ttl);
        const c = await ctx.connect();
        const { approval, trusted, untrusted, call, resume } = await approveRun(c.client, runId, {
          ...deciderOf(ctx, o),
          ttlMs,
          ...(o.resume ? { resume: true } : {}),
          ...(await expectedDigest(c.client, runId, o.digest)),
        });
        if (untrusted !== null)
          ctx.io.err(`warning: the workers will not trust this approval (audited refused): ${untrusted}\n`);
        if (o.json) ctx.io.out(json({ approval, trusted, call, resume }));
        else {
          ctx.io.out(
            keyValues([
              ['approved', approval.id],
              ['run', runId],
              ['stop', call.stopRef],
              ['call', `${call.tool} ${JSON.stringify(call.args)}`],
              ['digest', `${call.argsDigest} (only exactly this call may run)`],
              ['by', `${approval.approver}${approval.auth ? ' (signed)' : ' (unsigned)'}`],
              [
                'verified',
                trusted === null
                  ? 'not here (no AGENT_OPERATORS_FILE): a worker verifies it before it is used'
                  : trusted
                    ? 'yes, against AGENT_OPERATORS_FILE'
                    : `NO: ${untrusted ?? ''}`,
              ],
              ['valid until', approval.expiresAt],
              ...(resume
                ? ([['resume', `${resume.accepted ? 'ACCEPTED' : 'REFUSED'}: ${resume.reason}`]] as const)
                : ([['next', `agentctl resume ${runId}`]] as const)),
            ]),
          );
        }
        if (resume && !resume.accepted) throw new CliError(Exit.REFUSED, `resume refused: ${resume.reason}`);
      },
    );

  cmd
    .command('deny')
    .description(
      'Deny the call a run is stopped on; the run stays stopped (withdraws unused approvals of it)',
    )
    .argument('<runId>', 'workflow id of the stopped run')
    .option('--actor <name>', 'who denies (default $AGENTCTL_ACTOR / $USER; stored and audited)')
    .requiredOption('--reason <text>', 'why (stored and audited)')
    .option('--key <file>', 'operator key file to sign with (default AGENT_OPERATOR_KEY_FILE)')
    .option('--json', 'machine-readable output')
    .action(async (runId: string, o: { actor?: string; key?: string; reason: string; json?: boolean }) => {
      const c = await ctx.connect();
      const { denial, withdrawn, call } = await denyRun(c.client, runId, deciderOf(ctx, o));
      if (o.json) ctx.io.out(json({ denial, withdrawn, call }));
      else
        ctx.io.out(
          keyValues([
            ['denied', denial.id],
            ['run', `${runId} (stays stopped NEEDS_HUMAN ${call.reason})`],
            ['call', `${call.tool} ${JSON.stringify(call.args)}`],
            ['digest', call.argsDigest ?? '-'],
            ['by', denial.approver],
            ['withdrew', withdrawn.length > 0 ? withdrawn.join(', ') : '-'],
          ]),
        );
    });

  return cmd;
}
