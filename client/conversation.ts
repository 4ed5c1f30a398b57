/**
 * A person's side of a conversation run (docs/spec.md §7.16): send a message (the
 * `message` update), read what the agent said (the `conversation` query) and wait for its next
 * reply. None of it needs operator rights: a message carries no authority (it is text for the
 * model), and operator actions — resume, stop, approvals — stay signed. Errors are
 * {@link CliError}s: no such run (exit 1), bad input (exit 2); a refusal is an answer.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ServiceError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import {
  closedRefusal,
  conversationEnding,
  conversationQuery,
  messageUpdate,
  type ConversationView,
  type MessageAnswer,
  type MessageRequest,
  type TranscriptEntry,
} from '../common/conversation-run';
import { CliError, Exit } from './format';
import {
  closedResult,
  DEFAULT_CONFIRM_MS,
  describeRun,
  isClosed,
  isDeadline,
  unconfirmedReason,
} from './runs';

/** gRPC RESOURCE_EXHAUSTED: Temporal's limits on updates in flight per workflow and per second. */
const RESOURCE_EXHAUSTED = 8;
/**
 * gRPC codes of an update the server dropped before answering (ABORTED, UNAVAILABLE: `workflow
 * update was aborted` when its workflow task was lost under load) once the SDK's own retries
 * ran out: the same update id is sent again.
 */
const TRANSIENT = new Set([10, 14]);
/** One try of the update, at most (the SDK retries a busy answer within it at 1 s, 2.7 s …). */
const ATTEMPT_MS = 4_000;
/** Tries of one message at most (each with the same message id). */
const MAX_ATTEMPTS = 20;
/** How long a message is retried while the server says the run is busy, before it is refused. */
const BUSY_BUDGET_MS = 12_000;
/** Messages one client sends to one run at once; more wait in the client (the server allows 10 per run). */
const IN_FLIGHT_PER_CLIENT = 4;
/** The retry-after hint of a busy refusal: this long plus up to as much again (a burst spreads out), ms. */
const BUSY_RETRY_AFTER_MS = 2_000;

/** What {@link sendMessage} sends besides the text. */
export interface SendMessageOptions {
  /** Idempotency id (default random): sent again with the same id, the message is applied once. */
  readonly messageId?: string;
  /** Who writes (shown in the transcript; no authority). */
  readonly from?: string;
  /** Ends the conversation (the text, if any, is its last message). */
  readonly close?: boolean;
  /**
   * How long to wait for the worker's answer, ms (default 30 s): then `unconfirmed` (no worker
   * took it) or, when the server kept refusing it for load, `refused` with `retryAfterMs`.
   */
  readonly confirmMs?: number;
}

/** What became of a message: the run's answer, or why it was refused. */
export interface MessageOutcome {
  readonly accepted: boolean;
  /** `answer` | `queued` | `closing` when accepted; `refused` or `unconfirmed` otherwise. */
  readonly action: MessageAnswer['action'] | 'refused' | 'unconfirmed';
  readonly reason: string;
  readonly messageId: string;
  /** The message's place in the transcript (accepted only). */
  readonly seq?: number;
  /** Its place in the queue while the agent works (1 = next). */
  readonly position?: number;
  /**
   * A refusal for load (Temporal's limit on messages in flight to one run): this send was not
   * taken, or may have been (the reason says which);
   * send again, with the same messageId, after this long.
   */
  readonly retryAfterMs?: number;
}

/**
 * Sends a person's message to a conversation run (the `message` update, validated by the run).
 * A refusal — the run is not waiting for a person, is closed (in the run's words: `run PARTIAL
 * conversation_idle`), the message is empty or too long, the queue is full — is `accepted:
 * false` with the run's reason; an unknown run is exit 1. Under a burst, Temporal's limits on
 * updates in flight to one workflow are absorbed here: the same update (update id
 * `message-<messageId>`, so nothing applies twice) is tried again, bounded by `confirmMs`; if
 * the server still refuses it for load, the answer is `refused` with a reason and `retryAfterMs`,
 * never a bare SDK error.
 */
export async function sendMessage(
  client: Client,
  workflowId: string,
  text: string,
  o: SendMessageOptions = {},
): Promise<MessageOutcome> {
  const messageId = o.messageId ?? randomUUID();
  const refused = (reason: string): MessageOutcome => ({
    accepted: false,
    action: 'refused',
    reason,
    messageId,
  });
  const { handle, desc } = await describeRun(client, workflowId);
  if (isClosed(desc)) return refused(await closedReason(handle, desc.status.name));
  const req: MessageRequest = {
    text,
    messageId,
    ...(o.from ? { from: o.from } : {}),
    ...(o.close ? { close: true } : {}),
  };
  const ms = o.confirmMs ?? DEFAULT_CONFIRM_MS;
  const deadline = Date.now() + ms;
  // At most IN_FLIGHT_PER_CLIENT messages of this client to this run at once: a burst waits here
  // instead of storming the server (whose limit is per workflow, for all clients together).
  const release = await acquireSlot(client, workflowId, Math.min(deadline, Date.now() + BUSY_BUDGET_MS));
  if (!release) return busyRefusal(messageId, 'this client already has many messages in flight to it', false);
  try {
    return await sendUpdate(handle, req, ms, deadline);
  } finally {
    release();
  }
}

/**
 * The refusal of a message the run is too busy to take now. `maybeTaken`: an earlier try ran
 * out of time and the server may still have taken it; sent again with the same id, it is taken
 * at most once either way.
 */
function busyRefusal(messageId: string, why: string, maybeTaken: boolean): MessageOutcome {
  const retryAfterMs = BUSY_RETRY_AFTER_MS + Math.round(Math.random() * BUSY_RETRY_AFTER_MS);
  const fate = maybeTaken
    ? 'it may have been taken (then sending it again gets its answer)'
    : 'this send was not taken (if an earlier send of this id was, sending it again gets its answer)';
  return {
    accepted: false,
    action: 'refused',
    reason:
      'the conversation is busy: too many messages reached this run at once (Temporal limits the ' +
      `messages in flight to one workflow; ${why}); ${fate}: send it again, with the same message ` +
      `id, in ${Math.ceil(retryAfterMs / 1000)} s`,
    messageId,
    retryAfterMs,
  };
}

/** The `message` update with bounded retries of the same update id (see {@link sendMessage}). */
async function sendUpdate(
  handle: WorkflowHandle,
  req: MessageRequest,
  ms: number,
  deadline: number,
): Promise<MessageOutcome> {
  const messageId = req.messageId;
  const refused = (reason: string): MessageOutcome => ({
    accepted: false,
    action: 'refused',
    reason,
    messageId,
  });
  // The update id is the message id: the server too takes a retried message once.
  const updateId = `message-${messageId}`;
  let busy: string | null = null;
  let busySince = 0;
  let ranOutBefore = false;
  for (let attempt = 1; ; attempt++) {
    const until = Math.min(deadline, Date.now() + ATTEMPT_MS);
    try {
      const a = await handle.client.withDeadline(until, () =>
        handle.executeUpdate(messageUpdate, { args: [req], updateId }),
      );
      return { ...a, messageId };
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) return refused(err.cause?.message ?? err.message);
      if (err instanceof WorkflowNotFoundError) return refused(await closedReason(handle, null));
      let load = busyDetail(err);
      const ranOut =
        err instanceof WorkflowUpdateRPCTimeoutOrCancelledError ||
        isDeadline(err, until) ||
        TRANSIENT.has(grpcCode(err) ?? -1);
      if (load === null && !ranOut) throw err;
      // An attempt that ran out was either held back by the SDK's own retries of the server's
      // busy answer (the update was never admitted) or admitted and waiting for the run's
      // worker. Sending the same update id again is safe either way: it attaches, never repeats.
      if (ranOut) ranOutBefore = true;
      if (load === null && (await admitted(handle, updateId)) === false)
        load = 'the server did not admit it: too many messages in flight to this run';
      if (load !== null) {
        busy = load;
        busySince ||= Date.now();
      }
      const now = Date.now();
      // Busy for too long: a refusal with a reason and a hint, not a wait the person cannot see.
      if (busy !== null && (now - busySince >= BUSY_BUDGET_MS || now >= deadline || attempt >= MAX_ATTEMPTS))
        return busyRefusal(messageId, busy, ranOutBefore);
      // Admitted, not answered in time: the run's worker has not taken it (it may still).
      if (now >= deadline || attempt >= MAX_ATTEMPTS)
        return { accepted: false, action: 'unconfirmed', reason: unconfirmedReason(ms), messageId };
      if (load !== null) await sleep(Math.min(deadline - now, jittered(attempt)));
    }
  }
}

/** Messages one client has in flight to one run (a semaphore per client and workflow id). */
const SLOTS = new WeakMap<Client, Map<string, { used: number; waiters: Array<() => void> }>>();

/**
 * A slot for one more message of `client` to `workflowId`, or null when none freed up by
 * `until` (then nothing was sent). Returns its release.
 */
async function acquireSlot(client: Client, workflowId: string, until: number): Promise<(() => void) | null> {
  let byRun = SLOTS.get(client);
  if (!byRun) SLOTS.set(client, (byRun = new Map()));
  let s = byRun.get(workflowId);
  if (!s) byRun.set(workflowId, (s = { used: 0, waiters: [] }));
  const slot = s;
  const release = () => {
    slot.used -= 1;
    const next = slot.waiters.shift();
    if (next) next();
    else if (slot.used === 0) byRun.delete(workflowId);
  };
  if (slot.used < IN_FLIGHT_PER_CLIENT) {
    slot.used += 1;
    return release;
  }
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      slot.used += 1;
      resolve(release);
    };
    const timer = setTimeout(
      () => {
        slot.waiters.splice(slot.waiters.indexOf(wake), 1);
        resolve(null);
      },
      Math.max(0, until - Date.now()),
    );
    slot.waiters.push(wake);
  });
}

/** Backoff between tries of a busy message: 250 ms doubling to 2 s, with jitter (a burst spreads out). */
function jittered(attempt: number): number {
  const base = Math.min(2_000, 250 * 2 ** (attempt - 1));
  return Math.round(base * (0.5 + Math.random()));
}

/** The gRPC status code behind an SDK error (a `ServiceError`'s cause), if any. */
function grpcCode(err: unknown): number | null {
  const cause = err instanceof ServiceError ? err.cause : err;
  const code = (cause as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : null;
}

/** The server's load refusal (RESOURCE_EXHAUSTED) in words, or null for any other error. */
function busyDetail(err: unknown): string | null {
  if (grpcCode(err) !== RESOURCE_EXHAUSTED) return null;
  const details = ((err instanceof ServiceError ? err.cause : err) as { details?: unknown }).details;
  return typeof details === 'string' && details !== '' ? details : 'resource exhausted';
}

/**
 * Whether the server admitted the update (it waits for a worker), false when it never did
 * (it was refused for load), null when that cannot be told. One short poll, nothing written.
 */
async function admitted(handle: WorkflowHandle, updateId: string): Promise<boolean | null> {
  const c = handle.client;
  const stage = temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage;
  try {
    await c.withDeadline(Date.now() + 2_000, () =>
      c.workflowService.pollWorkflowExecutionUpdate({
        namespace: c.options.namespace,
        updateRef: { workflowExecution: { workflowId: handle.workflowId }, updateId },
        identity: c.options.identity,
        waitPolicy: { lifecycleStage: stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED },
      }),
    );
    return true;
  } catch (err) {
    return (err as { code?: unknown } | null)?.code === 5 /* NOT_FOUND */ ? false : null;
  }
}

/**
 * Why a closed conversation refuses, in the run's own words (its terminal state and reason, as
 * the run's validator says it: `the conversation is closed (run PARTIAL conversation_idle)`), not
 * Temporal's status. A run closed without a result (terminated, failed) names Temporal's status.
 */
async function closedReason(handle: WorkflowHandle, temporalStatus: string | null): Promise<string> {
  try {
    const r = await closedResult(handle);
    return closedRefusal(conversationEnding(r.terminal_state, r.reason).as);
  } catch {
    const status = temporalStatus ?? (await handle.describe().catch(() => null))?.status.name ?? 'CLOSED';
    return closedRefusal(`without a result: workflow ${status}`);
  }
}

/** What {@link readConversation} reads. */
export interface ReadConversationOptions {
  /** Only entries with a seq above this (default 0). */
  readonly after?: number;
}

/** The conversation as the run holds it: the transcript after `after`, and what the agent waits on. */
export async function readConversation(
  client: Client,
  workflowId: string,
  o: ReadConversationOptions = {},
): Promise<ConversationView> {
  const { handle } = await describeRun(client, workflowId);
  return queryConversation(handle, o.after ?? 0);
}

async function queryConversation(handle: WorkflowHandle, after: number): Promise<ConversationView> {
  try {
    return await handle.query(conversationQuery, { after });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/not a conversation/.test(message))
      throw new CliError(Exit.USAGE, `run ${handle.workflowId} is not a conversation`);
    throw err;
  }
}

/** The agent's replies (its questions, text replies and last word) after `after`. */
export async function getReplies(
  client: Client,
  workflowId: string,
  o: ReadConversationOptions = {},
): Promise<TranscriptEntry[]> {
  const view = await readConversation(client, workflowId, o);
  return view.entries.filter((e) => e.from === 'agent');
}

/** What {@link waitForReply} waits for. */
export interface WaitForReplyOptions extends ReadConversationOptions {
  /** Give up after this long, ms (default 5 minutes): a CliError (exit 1). */
  readonly timeoutMs?: number;
  /** How often the run is asked, ms (default 250). */
  readonly pollMs?: number;
}

/**
 * Waits for the agent's next entry after `after` (a question, a reply, or the conversation's
 * end) and returns it with the view it came in. A query per poll: nothing enters history.
 */
export async function waitForReply(
  client: Client,
  workflowId: string,
  o: WaitForReplyOptions = {},
): Promise<{ reply: TranscriptEntry | null; view: ConversationView }> {
  const { handle } = await describeRun(client, workflowId);
  const after = o.after ?? 0;
  const deadline = Date.now() + (o.timeoutMs ?? 300_000);
  for (;;) {
    const view = await queryConversation(handle, after);
    const reply = view.entries.find((e) => e.from === 'agent') ?? null;
    if (reply || !view.open) return { reply, view };
    if (Date.now() >= deadline)
      throw new CliError(Exit.ERROR, `no reply from the agent of ${workflowId} after seq ${after} in time`);
    await new Promise((r) => setTimeout(r, o.pollMs ?? 250));
  }
}
