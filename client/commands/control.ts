/** `agentctl resume|stop`: operator actions on a run. */
import { randomUUID } from 'node:crypto';
import { Command } from 'commander';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import {
  MAX_RESUME_NOTE_CHARS,
  resumeNoteSchema,
  statusQuery,
  type BudgetRaise,
  type ResumeRequest,
  type RunInput,
} from '../../common/contracts';
import { TerminalState, type BudgetKey } from '../../guard';
import { signRequest } from '../../operators/sign';
import type { Connected } from '../connect';
import { CliError, Exit, json, keyValues } from '../format';
import {
  closedResult,
  describeRun,
  followRun,
  isClosed,
  rejected,
  sendResume,
  settledOutcome,
  startRun,
  type ResumeOutcome,
} from '../runs';
import { sendStop } from '../stop';
import { requireWorker } from '../workers';
import { operatorKeyOf } from './operator';
import { formatOutcome } from './start';
import {
  BUDGET_FLAGS,
  budgetOption,
  defaultActor,
  openRun,
  positiveInt,
  runLink,
  countersOf,
  type Ctx,
} from './common';

/** `--raise-steps` lands on `raiseSteps`, … : one optional number per raisable budget. */
type RaiseOpts = { [K in BudgetKey as K extends `max${infer R}` ? `raise${R}` : never]?: number };

interface ResumeOpts extends RaiseOpts {
  from?: string;
  id?: string;
  actor?: string;
  reason?: string;
  precondition?: string;
  note?: string;
  requestId?: string;
  key?: string;
  wait?: boolean;
  timeout: number;
  confirmTimeout: number;
  json?: boolean;
}

/** `--note`, checked before anything is sent: a bad note is bad input (exit 2), nothing runs. */
function resumeNoteOf(text: string): string {
  const parsed = resumeNoteSchema.safeParse(text);
  if (!parsed.success)
    throw new CliError(Exit.USAGE, `--note: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/** Budgets a resume may raise, in the order `resume --help` lists them. */
const RAISABLE = Object.keys(BUDGET_FLAGS) as BudgetKey[];

const raiseProp = (key: BudgetKey) => key.replace(/^max/, 'raise') as keyof RaiseOpts;

function raiseOf(o: ResumeOpts): BudgetRaise | undefined {
  const raise: BudgetRaise = {};
  for (const key of RAISABLE) {
    const value = o[raiseProp(key)];
    if (value !== undefined) raise[key] = value;
  }
  return Object.keys(raise).length ? raise : undefined;
}

/** Terminal states `resume --from` can continue (the others have nothing left to resume). */
const RESUMABLE: ReadonlySet<string> = new Set([TerminalState.STOPPED_LOOP_GUARD, TerminalState.NEEDS_HUMAN]);

/** The input the run was started with (first event of its latest execution). */
async function startInputOf(handle: WorkflowHandle, client: Client): Promise<RunInput> {
  const history = await handle.fetchHistory();
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const payload = started?.input?.payloads?.[0];
  if (!payload)
    throw new CliError(Exit.ERROR, `run ${handle.workflowId}: cannot read its start input from history`);
  // History holds the payload as stored: encrypted by default (codec/), so decode it the
  // client's way (codecs in reverse order, then the payload converter).
  const dc = client.options.loadedDataConverter;
  let decoded = payload as Payload;
  for (const codec of [...dc.payloadCodecs].reverse()) decoded = (await codec.decode([decoded]))[0]!;
  return dc.payloadConverter.fromPayload(decoded) as RunInput;
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
  if (!result.checkpoint || !RESUMABLE.has(result.terminal_state)) {
    throw new CliError(
      Exit.REFUSED,
      `run ${source} ended ${result.terminal_state}: not resumable (only ${[...RESUMABLE].join(' and ')} runs are)`,
    );
  }
  // The new execution goes to the source's queue: without a worker there it would wait for nobody.
  await requireWorker(c, desc.taskQueue, 'Nothing was started.');
  const input = await startInputOf(src, c.client);
  // Same workflow id by default (a new execution, as continue-as-new keeps the id): the
  // run's progress facts and counters are keyed by it, so the re-verification compares like with like.
  const newId = o.id ?? source;
  const handle = await startRun(c.client, {
    workflowId: newId,
    taskQueue: desc.taskQueue,
    input: { ...input, checkpoint: result.checkpoint },
    summary: `${input.goal} (resumed from ${source})`,
  });
  ctx.io.err(
    `started ${newId === source ? `a new execution of ${source}` : newId} from the checkpoint of ${source}; verifying the resume…\n`,
  );
  // The new run restores the stop and waits for a verified resume: wait until it does.
  await followRun(handle, { untilWaiting: true, timeoutMs: o.timeout * 1000 });
  return {
    handle,
    answer: await sendResume(handle, signedResume(ctx, o.key, newId, req), {
      confirmMs: o.confirmTimeout * 1000,
    }),
  };
}

/**
 * The request with the operator's signature when agentctl has a key (`--key` or
 * AGENT_OPERATOR_KEY_FILE): a worker with an operators file accepts only signed requests.
 * The actor must be the key's operator.
 */
function signedResume(
  ctx: Ctx,
  keyPath: string | undefined,
  workflowId: string,
  req: ResumeRequest,
): ResumeRequest {
  const key = operatorKeyOf(ctx, keyPath);
  if (!key) return req;
  const fields = { ...req, actor: req.actor, precondition: req.precondition ?? '' };
  checkActor(key.operator, req.actor);
  return { ...fields, auth: signRequest(key, 'resume', workflowId, fields) };
}

function checkActor(operator: string, actor: string): void {
  if (operator !== actor)
    throw new CliError(
      Exit.USAGE,
      `--actor ${actor} does not match the signing key's operator "${operator}"`,
    );
}

/** The `run / resume / why` lines of a resume answer (plus any `extra`). */
function answerLines(runId: string, answer: ResumeOutcome, ...extra: [string, string][]): string {
  return keyValues([
    ['run', runId],
    ['resume', answer.accepted ? 'ACCEPTED' : answer.unconfirmed ? 'UNCONFIRMED' : 'REFUSED'],
    ['why', answer.reason],
    ...extra,
  ]);
}

/** The `resume` command. */
export function resumeCommand(ctx: Ctx): Command {
  const cmd = new Command('resume')
    .description(
      'Resume a stopped run after re-verifying its precondition (or --from a closed run, as a new run)',
    )
    .argument('[id]', 'workflow id of a stopped run that waits for resume')
    .option('--from <id>', 'continue a CLOSED run from its last checkpoint as a new run')
    .option('--id <workflowId>', 'with --from: id of the new run (default: the same id, a new execution)')
    .option('--actor <name>', 'who resumes (default $USER)')
    .option('--reason <text>', 'why (recorded in the trace)', 'operator resume')
    .option('--precondition <text>', 'what changed (recorded; the workflow re-verifies it)', '')
    .option(
      '--note <text>',
      `what the model is told with the resume, before its next turn (signed; at most ${MAX_RESUME_NOTE_CHARS} characters)`,
    )
    .option('--request-id <id>', 'idempotency id of this request (default random)')
    .option('--key <file>', 'operator key file to sign with (default AGENT_OPERATOR_KEY_FILE)');
  for (const key of RAISABLE) cmd.addOption(budgetOption(key, 'raise'));
  return cmd
    .option('--wait', 'when accepted, wait until the run closes or stops again and print the outcome')
    .option('--timeout <seconds>', 'with --wait / --from: give up after this long', positiveInt, 300)
    .option(
      '--confirm-timeout <seconds>',
      "wait this long for the worker's answer; then the resume is UNCONFIRMED (exit 1)",
      positiveInt,
      30,
    )
    .option('--json', 'machine-readable output')
    .action(async (id: string | undefined, o: ResumeOpts) => {
      if ((id === undefined) === (o.from === undefined)) {
        throw new CliError(Exit.USAGE, 'resume: give either a run id or --from ID (not both)');
      }
      if (o.id && !o.from) throw new CliError(Exit.USAGE, 'resume: --id only goes with --from');
      const raise = raiseOf(o);
      const req: ResumeRequest = {
        actor: o.actor ?? operatorKeyOf(ctx, o.key)?.operator ?? defaultActor(ctx.env),
        reason: o.reason ?? 'operator resume',
        precondition: o.precondition ?? '',
        requestId: o.requestId ?? randomUUID(),
        ...(raise ? { raise } : {}),
        ...(o.note !== undefined ? { note: resumeNoteOf(o.note) } : {}),
      };
      const c = await ctx.connect();
      let handle: WorkflowHandle;
      let answer: ResumeOutcome;
      if (o.from) {
        ({ handle, answer } = await resumeFrom(ctx, c, o, req));
      } else {
        const r = await describeRun(c.client, id as string);
        handle = r.handle;
        if (!isClosed(r.desc))
          await requireWorker(c, r.desc.taskQueue, 'Nothing was sent: the resume would wait unanswered.');
        answer = isClosed(r.desc)
          ? rejected(
              `run is closed (${r.desc.status.name}); continue it as a new run with: agentctl resume --from ${id}`,
            )
          : await sendResume(handle, signedResume(ctx, o.key, handle.workflowId, req), {
              confirmMs: o.confirmTimeout * 1000,
            });
      }
      const runId = handle.workflowId;
      if (o.json && !(answer.accepted && o.wait)) ctx.io.out(json({ workflow_id: runId, ...answer }));
      if (answer.unconfirmed) {
        if (!o.json) ctx.io.out(answerLines(runId, answer));
        throw new CliError(Exit.ERROR, `resume ${answer.reason}`);
      }
      if (!answer.accepted) {
        if (!o.json) ctx.io.out(answerLines(runId, answer));
        const hint = o.from ? ` (run ${runId} stays stopped, waiting for a verified resume)` : '';
        throw new CliError(Exit.REFUSED, `resume refused: ${answer.reason}${hint}`);
      }
      if (!o.wait) {
        if (!o.json) ctx.io.out(answerLines(runId, answer, ['follow', `agentctl watch ${runId}`]));
        return;
      }
      const { outcome } = await settledOutcome(handle, { timeoutMs: o.timeout * 1000, untilWaiting: true });
      const counters = await countersOf(ctx, runId);
      if (o.json) ctx.io.out(json({ ...outcome, workflow_id: runId, counters, resume: answer }));
      else
        ctx.io.out(
          `resume accepted: ${answer.reason}\n` +
            formatOutcome(runId, outcome, counters, runLink(ctx, c, runId)),
        );
    });
}

/** The `stop` command (the kill switch). */
export function stopCommand(ctx: Ctx): Command {
  return new Command('stop')
    .description(
      'Kill switch: the run stops before its next tool call (resumable with `resume`); reports what the worker did',
    )
    .argument('<id>', 'workflow id')
    .option('--actor <name>', 'who stops it (default $USER)')
    .option('--reason <text>', 'why (recorded)', 'operator stop')
    .option('--request-id <id>', 'idempotency id of this request (default random)')
    .option('--key <file>', 'operator key file to sign with (default AGENT_OPERATOR_KEY_FILE)')
    .option(
      '--confirm-timeout <seconds>',
      "wait this long for the worker's answer; then the stop is UNCONFIRMED (exit 1)",
      positiveInt,
      30,
    )
    .option('--json', 'machine-readable output')
    .action(
      async (
        id: string,
        o: {
          actor?: string;
          reason: string;
          requestId?: string;
          key?: string;
          confirmTimeout: number;
          json?: boolean;
        },
      ) => {
        const { handle, desc } = await openRun(ctx, id);
        if (isClosed(desc))
          throw new CliError(Exit.REFUSED, `run ${id} is closed (${desc.status.name}); nothing to stop`);
        // A run with no worker makes no tool call meanwhile; the stop would wait unanswered.
        await requireWorker(
          await ctx.connect(),
          desc.taskQueue,
          'Nothing was sent: start a worker, then stop the run (it makes no tool call until one polls).',
        );
        const status = await handle.query(statusQuery).catch(() => null);
        if (status && status.phase !== 'RUNNING') {
          throw new CliError(
            Exit.REFUSED,
            `run ${id} is already stopped (${status.phase}: ${status.terminalState ?? '-'} ${status.guardReason ?? ''}); nothing to stop`,
          );
        }
        const key = operatorKeyOf(ctx, o.key);
        const fields = {
          actor: o.actor ?? key?.operator ?? defaultActor(ctx.env),
          reason: o.reason,
          requestId: o.requestId ?? randomUUID(),
        };
        if (key) checkActor(key.operator, fields.actor);
        const req = key ? { ...fields, auth: signRequest(key, 'stop', id, fields) } : fields;
        const answer = await sendStop(handle, req, { confirmMs: o.confirmTimeout * 1000 });
        // `stop_requested` predates the worker's answer: kept for scripts that read it,
        // it is true only when the worker took the stop, never for a refused or unconfirmed one.
        if (o.json) ctx.io.out(json({ workflow_id: id, stop_requested: answer.accepted, ...req, ...answer }));
        else
          ctx.io.out(
            keyValues([
              ['run', id],
              ['stop', answer.outcome.toUpperCase()],
              ['by', req.actor],
              ['why', answer.answer],
              ...(answer.accepted ? ([['follow', `agentctl status ${id}`]] as [string, string][]) : []),
            ]),
          );
        if (answer.outcome === 'refused') throw new CliError(Exit.REFUSED, `stop refused: ${answer.answer}`);
        if (answer.outcome === 'unconfirmed') throw new CliError(Exit.ERROR, `stop ${answer.answer}`);
      },
    );
}
