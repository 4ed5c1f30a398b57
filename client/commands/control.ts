/** `agentctl resume|stop`: operator actions on a run. */
import { randomUUID } from 'node:crypto';
import { Command } from 'commander';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  resumeUpdate,
  statusQuery,
  stopSignal,
  WORKFLOW_TYPE,
  type BudgetRaise,
  type ResumeAnswer,
  type ResumeRequest,
  type RunInput,
} from '../../common/contracts';
import type { Connected } from '../connect';
import { CliError, Exit, json, keyValues, uiBaseFor, uiLink } from '../format';
import { closedResult, describeRun, followRun, isClosed, readCounters, settledOutcome } from '../runs';
import { formatOutcome } from './start';
import { defaultActor, positiveInt, positiveNumber, worldUrlOf, type Ctx } from './common';

interface ResumeOpts {
  from?: string;
  id?: string;
  actor?: string;
  reason?: string;
  precondition?: string;
  requestId?: string;
  raiseSteps?: number;
  raiseMs?: number;
  raiseTokens?: number;
  raiseCostUsd?: number;
  raiseWaitPolls?: number;
  wait?: boolean;
  timeout: number;
  json?: boolean;
}

function raiseOf(o: ResumeOpts): BudgetRaise | undefined {
  const raise: BudgetRaise = {};
  if (o.raiseSteps !== undefined) raise.maxSteps = o.raiseSteps;
  if (o.raiseMs !== undefined) raise.maxMs = o.raiseMs;
  if (o.raiseTokens !== undefined) raise.maxTokens = o.raiseTokens;
  if (o.raiseCostUsd !== undefined) raise.maxCostUsd = o.raiseCostUsd;
  if (o.raiseWaitPolls !== undefined) raise.maxWaitPolls = o.raiseWaitPolls;
  return Object.keys(raise).length ? raise : undefined;
}

/** The outcome of one resume attempt. */
export interface ResumeOutcome {
  readonly accepted: boolean;
  readonly reason: string;
  /** true when the workflow's validator refused before anything ran. */
  readonly rejectedByValidator: boolean;
  readonly progressVersion: number | null;
}

/** Sends the `resume` update; a validator rejection is a refusal, not an error. */
export async function sendResume(handle: WorkflowHandle, req: ResumeRequest): Promise<ResumeOutcome> {
  try {
    const a: ResumeAnswer = await handle.executeUpdate(resumeUpdate, { args: [req] });
    return {
      accepted: a.accepted,
      reason: a.reason,
      rejectedByValidator: false,
      progressVersion: a.progressVersion,
    };
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      return {
        accepted: false,
        reason: err.cause?.message ?? err.message,
        rejectedByValidator: true,
        progressVersion: null,
      };
    }
    if (err instanceof WorkflowNotFoundError) {
      return {
        accepted: false,
        reason: `run is closed; continue it as a new run with: agentctl resume --from ${handle.workflowId}`,
        rejectedByValidator: true,
        progressVersion: null,
      };
    }
    throw err;
  }
}

/** The input the run was started with (first event of its latest execution). */
async function startInputOf(handle: WorkflowHandle): Promise<RunInput> {
  const history = await handle.fetchHistory();
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const payload = started?.input?.payloads?.[0];
  if (!payload)
    throw new CliError(Exit.ERROR, `run ${handle.workflowId}: cannot read its start input from history`);
  return defaultPayloadConverter.fromPayload(payload as Payload) as RunInput;
}

/** `resume --from ID`: continue a closed run's checkpoint as a new run, then resume it (verified). */
async function resumeFrom(
  ctx: Ctx,
  c: Connected,
  o: ResumeOpts,
  req: ResumeRequest,
): Promise<{ handle: WorkflowHandle; answer: ResumeOutcome }> {
  const source = o.from as string;
  const { handle: src, desc } = await describeRun(c.client, source);
  if (!isClosed(desc)) {
    throw new CliError(
      Exit.REFUSED,
      `run ${source} is still open: resume it in place with \`agentctl resume ${source}\``,
    );
  }
  const result = await closedResult(src);
  if (
    !result.checkpoint ||
    (result.terminal_state !== 'STOPPED_LOOP_GUARD' && result.terminal_state !== 'NEEDS_HUMAN')
  ) {
    throw new CliError(
      Exit.REFUSED,
      `run ${source} ended ${result.terminal_state}: not resumable (only STOPPED_LOOP_GUARD and NEEDS_HUMAN runs are)`,
    );
  }
  const input = await startInputOf(src);
  // Same workflow id by default (a new execution, as continue-as-new keeps the id): the
  // run's progress facts and counters are keyed by it, so the re-verification compares like with like.
  const newId = o.id ?? source;
  const handle = await c.client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: desc.taskQueue,
    workflowId: newId,
    args: [{ ...input, checkpoint: result.checkpoint }],
    staticSummary: `${input.goal} (resumed from ${source})`,
  });
  ctx.io.err(
    `started ${newId === source ? `a new execution of ${source}` : newId} from the checkpoint of ${source}; verifying the resume…\n`,
  );
  // The new run restores the stop and waits for a verified resume: wait until it does.
  await followRun(handle, { untilWaiting: true, timeoutMs: o.timeout * 1000 });
  return { handle, answer: await sendResume(handle, req) };
}

export function resumeCommand(ctx: Ctx): Command {
  return new Command('resume')
    .description(
      'Resume a stopped run after re-verifying its precondition (or --from a closed run, as a new run)',
    )
    .argument('[id]', 'workflow id of a stopped run that waits for resume')
    .option('--from <id>', 'continue a CLOSED run from its last checkpoint as a new run')
    .option('--id <workflowId>', 'with --from: id of the new run (default: the same id, a new execution)')
    .option('--actor <name>', 'who resumes (default $USER)')
    .option('--reason <text>', 'why (recorded in the trace)', 'operator resume')
    .option('--precondition <text>', 'what changed (recorded; the workflow re-verifies it)', '')
    .option('--request-id <id>', 'idempotency id of this request (default random)')
    .option('--raise-steps <n>', 'raise the step budget to n', positiveInt)
    .option('--raise-ms <ms>', 'raise the wall-clock budget to ms', positiveNumber)
    .option('--raise-tokens <n>', 'raise the token budget to n', positiveNumber)
    .option('--raise-cost-usd <usd>', 'raise the cost budget to usd', positiveNumber)
    .option('--raise-wait-polls <n>', 'raise the honoured-poll budget to n', positiveInt)
    .option('--wait', 'when accepted, wait until the run closes or stops again and print the outcome')
    .option('--timeout <seconds>', 'with --wait / --from: give up after this long', positiveInt, 300)
    .option('--json', 'machine-readable output')
    .action(async (id: string | undefined, o: ResumeOpts) => {
      if ((id === undefined) === (o.from === undefined)) {
        throw new CliError(Exit.USAGE, 'resume: give either a run id or --from ID (not both)');
      }
      if (o.id && !o.from) throw new CliError(Exit.USAGE, 'resume: --id only goes with --from');
      const req: ResumeRequest = {
        actor: o.actor ?? defaultActor(ctx.env),
        reason: o.reason ?? 'operator resume',
        precondition: o.precondition ?? '',
        requestId: o.requestId ?? randomUUID(),
        ...(raiseOf(o) ? { raise: raiseOf(o) } : {}),
      };
      const c = await ctx.connect();
      let handle: WorkflowHandle;
      let answer: ResumeOutcome;
      if (o.from) {
        ({ handle, answer } = await resumeFrom(ctx, c, o, req));
      } else {
        const r = await describeRun(c.client, id as string);
        handle = r.handle;
        if (isClosed(r.desc)) {
          answer = {
            accepted: false,
            reason: `run is closed (${r.desc.status.name}); continue it as a new run with: agentctl resume --from ${id}`,
            rejectedByValidator: true,
            progressVersion: null,
          };
        } else {
          answer = await sendResume(handle, req);
        }
      }
      const runId = handle.workflowId;
      if (o.json && !(answer.accepted && o.wait)) ctx.io.out(json({ workflow_id: runId, ...answer }));
      if (!answer.accepted) {
        if (!o.json)
          ctx.io.out(
            keyValues([
              ['run', runId],
              ['resume', 'REFUSED'],
              ['why', answer.reason],
            ]),
          );
        const hint = o.from ? ` (run ${runId} stays stopped, waiting for a verified resume)` : '';
        throw new CliError(Exit.REFUSED, `resume refused: ${answer.reason}${hint}`);
      }
      if (!o.wait) {
        if (!o.json)
          ctx.io.out(
            keyValues([
              ['run', runId],
              ['resume', 'ACCEPTED'],
              ['why', answer.reason],
              ['follow', `agentctl watch ${runId}`],
            ]),
          );
        return;
      }
      const { outcome } = await settledOutcome(handle, { timeoutMs: o.timeout * 1000, untilWaiting: true });
      const counters = await readCounters(worldUrlOf(ctx.env), runId);
      if (o.json) ctx.io.out(json({ ...outcome, workflow_id: runId, counters, resume: answer }));
      else
        ctx.io.out(
          `resume accepted: ${answer.reason}\n` +
            formatOutcome(
              runId,
              outcome,
              counters,
              uiLink(uiBaseFor(c.address, ctx.env), c.namespace, runId),
            ),
        );
    });
}

export function stopCommand(ctx: Ctx): Command {
  return new Command('stop')
    .description('Kill switch: the run stops before its next tool call (resumable with `resume`)')
    .argument('<id>', 'workflow id')
    .option('--actor <name>', 'who stops it (default $USER)')
    .option('--reason <text>', 'why (recorded)', 'operator stop')
    .option('--request-id <id>', 'idempotency id of this request (default random)')
    .option('--json', 'machine-readable output')
    .action(async (id: string, o: { actor?: string; reason: string; requestId?: string; json?: boolean }) => {
      const c = await ctx.connect();
      const { handle, desc } = await describeRun(c.client, id);
      if (isClosed(desc))
        throw new CliError(Exit.REFUSED, `run ${id} is closed (${desc.status.name}); nothing to stop`);
      const status = await handle.query(statusQuery).catch(() => null);
      if (status && status.phase !== 'RUNNING') {
        throw new CliError(
          Exit.REFUSED,
          `run ${id} is already stopped (${status.phase}: ${status.terminalState ?? '-'} ${status.guardReason ?? ''}); nothing to stop`,
        );
      }
      const req = {
        actor: o.actor ?? defaultActor(ctx.env),
        reason: o.reason,
        requestId: o.requestId ?? randomUUID(),
      };
      await handle.signal(stopSignal, req);
      if (o.json) ctx.io.out(json({ workflow_id: id, stop_requested: true, ...req }));
      else
        ctx.io.out(
          `stop requested for ${id} by ${req.actor}: the run stops before its next tool call (agentctl status ${id})\n`,
        );
    });
}
