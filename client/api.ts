/**
 * The client API of agent runs as typed functions over a Temporal `Client`: start, resume,
 * stop, status, report, trace, wait, and approvals (list, approve, deny, the audit:
 * client/approvals.ts, with the rules of `agentctl approvals`). It is what the package
 * exports for code that drives runs without agentctl, and it sits on the same helpers as
 * agentctl (client/runs.ts), so both refuse, fall back and time out alike. Errors are {@link CliError}s: their
 * `exitCode` says what kind of failure it was (2 bad input, 1 no such run, 3 refused).
 *
 * Nothing here imports the worker: a process that only starts and inspects runs does not
 * load the Temporal worker runtime. The approval functions load the approval store and the
 * ledger's drivers only when they are called.
 */
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import {
  DEFAULT_TASK_QUEUE,
  resumeNoteSchema,
  runInputSchema,
  statusQuery,
  WORKFLOW_ID_PREFIX,
  type BudgetRaise,
  type ResumeRequest,
  type RunInput,
  type RunResult,
  type RunStatus,
  type StopRequest,
  type TracePage,
  type TracePageArgs,
} from '../common/contracts';
import type { StopReport } from '../guard';
import { signRequest, type OperatorKeyFile } from '../operators/sign';
import { CliError, Exit } from './format';
import { sendStop, type StopOutcome } from './stop';
import { runReport, runStatus, runTrace } from './run-reads';
import {
  agentRunResult,
  describeRun,
  isClosed,
  rejected,
  sendResume,
  settledOutcome,
  startRun,
  type FollowOptions,
  type ResumeOutcome,
  type RunOutcome,
  type StartRunOptions,
} from './runs';

/** What {@link startAgentRun} starts. */
export interface StartAgentRunOptions {
  /** The workflow input; validated against `runInputSchema` before anything is sent. */
  readonly input: RunInput;
  /** Workflow id (default `agent-run-<uuid>`); a run already open under it is refused. */
  readonly workflowId?: string;
  /** Task queue of the workers hosting the run (default `agent-loop-guard`). */
  readonly taskQueue?: string;
  /** The Web UI's summary line (default: the goal). */
  readonly summary?: string;
  /**
   * The worker's payload store (`PayloadStore.over(await openLedger(LEDGER_URL))`): a scripted
   * input above the payload limit starts with its calls by reference (docs/spec.md §7.2).
   */
  readonly payloads?: StartRunOptions['payloads'];
}

/**
 * Starts an agent run. Malformed input is a CliError (exit 2) naming every bad field; an
 * id that is already running is a CliError (exit 1).
 */
export async function startAgentRun(
  client: Client,
  o: StartAgentRunOptions,
): Promise<WorkflowHandleWithFirstExecutionRunId> {
  const parsed = runInputSchema.safeParse(o.input);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`)
      .join('; ');
    throw new CliError(Exit.USAGE, `invalid run input: ${problems}`);
  }
  return startRun(client, {
    workflowId: o.workflowId ?? `${WORKFLOW_ID_PREFIX}-${randomUUID()}`,
    taskQueue: o.taskQueue ?? DEFAULT_TASK_QUEUE,
    // The caller's input as written: the workflow applies the defaults itself, so the
    // history shows what was asked for.
    input: o.input,
    ...(o.summary === undefined ? {} : { summary: o.summary }),
    ...(o.payloads ? { payloads: o.payloads } : {}),
  });
}

/** What a resume says (the `resume` update's payload, with defaults). */
export interface ResumeAgentRunOptions {
  /** Who resumes (recorded in the trace). */
  readonly actor: string;
  /** Why (default `resume`). */
  readonly reason?: string;
  /** What the caller says changed; recorded, the workflow re-verifies it itself. */
  readonly precondition?: string;
  /** Idempotency id of this request (default random): a repeat with the same id changes nothing. */
  readonly requestId?: string;
  /** Budgets to raise (lifts a budget stop). */
  readonly raise?: BudgetRaise;
  /**
   * What the model is told with the resume, before its next turn (`agentctl resume --note`):
   * plain text, at most 2,000 characters, no control characters but newlines and tabs; signed
   * with the request. A bad note is refused before anything is sent.
   */
  readonly note?: string;
  /**
   * The operator key to sign with, as `agentctl resume --key` signs (default: unsigned, which
   * only a worker in open mode accepts). The actor must be the key's operator (exit 2 otherwise).
   */
  readonly key?: OperatorKeyFile | null;
  /** How long to wait for the worker's answer, ms (default 30 s); then the outcome is `unconfirmed: true`. */
  readonly confirmMs?: number;
}

/** A resume's note checked as the workflow will check it: bad input says so, nothing is sent. */
function checkedNote(note: string): string {
  const parsed = resumeNoteSchema.safeParse(note);
  if (!parsed.success)
    throw new CliError(Exit.USAGE, `resume note: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/**
 * Sends the verified `resume` to a run stopped and waiting for it. A refusal is an answer,
 * not an error (`accepted: false` with the reason); a closed run is refused the same way.
 */
export async function resumeAgentRun(
  client: Client,
  workflowId: string,
  o: ResumeAgentRunOptions,
): Promise<ResumeOutcome> {
  const { handle, desc } = await describeRun(client, workflowId);
  if (isClosed(desc)) {
    return rejected(
      `run is closed (${desc.status.name}); continue it as a new run with: agentctl resume --from ${workflowId}`,
    );
  }
  const req: ResumeRequest = {
    actor: o.actor,
    reason: o.reason ?? 'resume',
    precondition: o.precondition ?? '',
    requestId: o.requestId ?? randomUUID(),
    ...(o.raise ? { raise: o.raise } : {}),
    ...(o.note !== undefined ? { note: checkedNote(o.note) } : {}),
  };
  return sendResume(
    handle,
    o.key ? signedBy(o.key, 'resume', workflowId, req) : req,
    o.confirmMs === undefined ? {} : { confirmMs: o.confirmMs },
  );
}

/**
 * The request with the operator's signature (operators/sign.ts), as agentctl signs it; an
 * actor other than the key's operator is bad input (exit 2), as in agentctl.
 */
function signedBy<T extends ResumeRequest | StopRequest>(
  key: OperatorKeyFile,
  action: 'resume' | 'stop',
  workflowId: string,
  req: T,
): T {
  if (key.operator !== req.actor)
    throw new CliError(
      Exit.USAGE,
      `actor ${req.actor} does not match the signing key's operator "${key.operator}"`,
    );
  return { ...req, auth: signRequest(key, action, workflowId, req) };
}

/** Who stops a run and why (the `stop` signal's payload, with defaults). */
export interface StopAgentRunOptions {
  readonly actor: string;
  /** Why (default `stop`). */
  readonly reason?: string;
  /** Idempotency id of this request (default random). */
  readonly requestId?: string;
  /** The operator key to sign with, as `agentctl stop --key` signs (default: unsigned). */
  readonly key?: OperatorKeyFile | null;
  /** How long to wait for the worker's answer, ms (default 30 s); then the outcome is `unconfirmed`. */
  readonly confirmMs?: number;
}

/** The request sent, and what the worker did with it (client/stop.ts). */
export type StopAgentRunResult = StopRequest & StopOutcome;

/**
 * The kill switch: the run stops before its next tool call and waits for a resume.
 * A closed run or one already stopped is a CliError (exit 3), as in `agentctl stop`.
 * Returns the request that was sent and the worker's answer: `outcome` is `accepted` only when
 * the worker took the stop, `refused` with its reason (not authorised, say), or `unconfirmed`
 * when no worker answered within `confirmMs`. A refusal is an answer, not an error.
 */
export async function stopAgentRun(
  client: Client,
  workflowId: string,
  o: StopAgentRunOptions,
): Promise<StopAgentRunResult> {
  const { handle, desc } = await describeRun(client, workflowId);
  if (isClosed(desc))
    throw new CliError(Exit.REFUSED, `run ${workflowId} is closed (${desc.status.name}); nothing to stop`);
  // No status yet means no workflow task ran yet: the stop is still the right thing to send.
  // Bounded: a run no worker serves does not answer queries (the server gives up after ~30 s).
  const status = await client
    .withDeadline(Date.now() + Math.min(o.confirmMs ?? 5000, 5000), () => handle.query(statusQuery))
    .catch(() => null);
  if (status && status.phase !== 'RUNNING') {
    throw new CliError(
      Exit.REFUSED,
      `run ${workflowId} is already stopped (${status.phase}: ${status.terminalState ?? '-'} ${status.guardReason ?? ''}); nothing to stop`,
    );
  }
  const req: StopRequest = {
    actor: o.actor,
    reason: o.reason ?? 'stop',
    requestId: o.requestId ?? randomUUID(),
  };
  const sent = o.key ? signedBy(o.key, 'stop', workflowId, req) : req;
  const outcome = await sendStop(handle, sent, o.confirmMs === undefined ? {} : { confirmMs: o.confirmMs });
  return { ...sent, ...outcome };
}

/** The run's status (from its result once it is closed and no worker answers queries). */
export async function getAgentRunStatus(client: Client, workflowId: string): Promise<RunStatus> {
  const { handle, desc } = await describeRun(client, workflowId);
  return runStatus(handle, desc);
}

/** The run's StopReport (null while it runs or when it COMPLETED). */
export async function getAgentRunReport(client: Client, workflowId: string): Promise<StopReport | null> {
  const { handle, desc } = await describeRun(client, workflowId);
  return runReport(handle, desc);
}

/** A page of the run's trace (`{ offset, limit }`, at most 1000 records a page). */
export async function getAgentRunTrace(
  client: Client,
  workflowId: string,
  args: TracePageArgs = {},
): Promise<TracePage> {
  const { handle, desc } = await describeRun(client, workflowId);
  return runTrace(handle, desc, args);
}

/** What {@link waitForAgentRun} returns. */
export interface AgentRunSettled {
  /** The replay-shaped outcome (docs/spec.md §6): terminal state, reason, counts, decisions, report. */
  readonly outcome: RunOutcome;
  /** True when the run closed; false when it stopped and waits for a resume. */
  readonly closed: boolean;
  /** The workflow's result, once closed. */
  readonly result: RunResult | null;
}

/**
 * Waits until the run closes or, with `untilWaiting` (the default), stops and waits for a
 * resume. Gives up after `timeoutMs` (default 5 minutes) with a CliError (exit 1).
 */
export async function waitForAgentRun(
  client: Client,
  run: string | WorkflowHandle,
  o: FollowOptions = {},
): Promise<AgentRunSettled> {
  const handle = typeof run === 'string' ? client.workflow.getHandle(run) : run;
  const { outcome, closed, result } = await settledOutcome(handle, o);
  return { outcome, closed, result };
}

/**
 * The RunResult of a run once it closes, whatever its terminal state. A COMPLETED run returns it
 * from `handle.result()`; a run that ended in any other state closed as a failed workflow whose
 * typed failure carries it (`AgentRunNotCompleted`, common/run-ended.ts), so `handle.result()`
 * rejects for it: this answers it all the same. Any other failure (a terminated run, an invalid
 * input, a refused checkpoint) rejects as `handle.result()` does.
 */
export async function getAgentRunResult(client: Client, run: string | WorkflowHandle): Promise<RunResult> {
  return agentRunResult(typeof run === 'string' ? client.workflow.getHandle(run) : run);
}

// Approvals from code: the rules of `agentctl approvals` (docs/security.md "Approvals").
export {
  approveRun,
  denyRun,
  getApprovalAudit,
  getPendingApproval,
  listApprovals,
  listPendingApprovals,
} from './approvals';
export type {
  ApprovalAuditOptions,
  ApprovalStoreOptions,
  ApproveRunOptions,
  ApproveRunResult,
  DecideOptions,
  DenyRunResult,
  ListApprovalsOptions,
  ListPendingOptions,
  PendingApproval,
} from './approvals';
export type { ApprovalRecord, ApprovalState, AuditEntry } from '../storage/approvals/types';
export type { OperatorKeyFile } from '../operators/sign';

// A person's side of a conversation run: no operator key, a message is text for the model.
export { getReplies, readConversation, sendMessage, waitForReply } from './conversation';
export type {
  MessageOutcome,
  ReadConversationOptions,
  SendMessageOptions,
  WaitForReplyOptions,
} from './conversation';
// One connection for a person's client: the workers' payload codec (AGENT_CODEC*)
// and the Temporal connection settings, so `sendMessage` speaks to an encrypted worker with
// this import alone. The same function as the root package's `connectClient`.
export { connect as connectClient } from './connect';
export type { Connected } from './connect';

// What a client-only process needs next to these functions, so `agent-loop-guard/client`
// is the one import it makes (the root entry has the most used of these names too).
export { CliError, Exit } from './format';
export { PayloadCodecMismatchError } from '../codec/mismatch';
export { NotAGuardedRunError } from './engine';
export { getAgentRunTree, formatTree } from './tree';
export type { AgentTreeNode } from './tree';
export type { ExitCode } from './format';
export type { FollowOptions, ResumeOutcome, RunOutcome } from './runs';
export type { StopOutcome, StopState } from './stop';
export { outcomeOfResult } from './runs';
export { loadReplayFile } from './replay';
export { readOperatorKey } from '../operators/sign';
export { RUN_NOT_COMPLETED, runResultOf } from '../common/run-ended';
export type { StopReport } from '../guard';
// The workflow's contract: its input and result, messages, schemas and ids (client/contracts.ts).
export * from './contracts';
// The guard profiles: what a fresh LLM run decides with (`guard` overrides it key by
// key), for a client that shows, checks or replays a run at the same defaults.
export {
  GUARD_PROFILES,
  GUARD_PROFILE_NAMES,
  LLM_PROFILE,
  CODING_PROFILE,
  guardProfile,
  UnknownProfileError,
} from '../guard';
export type { GuardProfileName } from '../guard';
