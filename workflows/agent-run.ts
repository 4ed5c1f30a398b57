/**
 * The agent-run workflow (docs/spec.md §7): plan → guard.before → tool → guard.after,
 * until a terminal state; a stop keeps its checkpoint and waits durably for a `resume`
 * whose precondition an activity re-verifies; long runs continue as new. The state lives
 * in {@link RunState}, its messages go through its {@link RunGate}, each turn's steps are
 * {@link RunSteps} and the queries are views (workflows/run-views.ts); the planner and every
 * tool are activities; the guard is pure and gets workflow time.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { runInputSchema, type ResolvedRunInput, type RunInput, type RunResult } from '../common/contracts';
import { childEventSignal } from '../common/sub-agents';
import { conversationQuery, messageUpdate } from '../common/conversation-run';
import { Conversation } from './conversation';
import { GuardReason, isBudgetReason, TerminalState, type ToolResult } from '../guard';
import type { RunToolOutput } from '../activities/types';
import { runActivities, type RunActivities } from './run-activities';
import { RunGate } from '../core/gate';
import type { BeforeOutcome } from '../core/step';
import { RunState } from './run-state';
import { Pending, RunSteps, type PlanStep, type Proposal, type ToolStep } from './run-steps';
import { lighterInput } from './script-ref';
import { checkpointOf, publish, statusOf } from './run-views';
import { finishRun } from './run-end';
import { HistoryMarks, outcomeMark } from './history-marks';
import { pageOutTrace, sealedCheckpoint } from './run-seal';
import { installRunHandlers } from '../core/handlers';
import { SubAgents, tellParent } from './sub-agents';
import { TextReplies } from './text-replies';
import { finalWord } from './final-word';

/** Wait before re-planning after RETRYABLE/PENDING without a server-given time. */
export const DEFAULT_WAIT_MS = 1000;

/** Runs one agent job under the loop guard. */
export async function agentRun(rawInput: RunInput): Promise<RunResult> {
  const parsed = runInputSchema.safeParse(rawInput);
  if (!parsed.success) {
    // A malformed input can never run: fail at once with the field named, not retry forever.
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`);
    throw ApplicationFailure.nonRetryable(`invalid run input: ${problems.join('; ')}`, 'InvalidRunInput');
  }
  const input = parsed.data;
  const acts = runActivities(input, workflowInfo().workflowId);
  await refuseForgedCheckpoint(input.checkpoint, acts);
  const run = new RunState(input, workflowInfo().workflowId, acts);
  run.publisher = publish;
  const gate = new RunGate(run, acts, {
    // A sub-agent's budget is a reservation out of its parent's: it ends, and its parent's
    // planner decides (a raise here could make the tree spend more than its root's budget).
    endsInsteadOfWaiting: (stop) => input.tree !== undefined && isBudgetReason(stop.reason),
    onWaiting: () => tellParent(run, 'stopped'),
    onResumed: () => tellParent(run, 'resumed'),
    // A parent waiting on its stopped child still runs: its kill switch stops the subtree (§7.14).
    stillRunning: () => run.stopInForce?.reason === GuardReason.CHILD_STOPPED,
  });
  const subAgents = new SubAgents(run, gate);
  const step = new RunSteps(run, acts, subAgents);
  const replies = new TextReplies(run);
  const conv = Conversation.of(run);
  const marks = new HistoryMarks(acts.markHistory);
  setHandler(childEventSignal, (e) => subAgents.onChildEvent(e), {
    description: "A sub-agent's event for its parent run (sent by the runtime, not by a person).",
  });
  installRunHandlers(run, gate, { status: () => statusOf(run), checkpoint: () => checkpointOf(run) });
  // A person's message: refused by the validator on a run that is not a conversation.
  setHandler(messageUpdate, (raw) => conv!.onMessage(raw), {
    validator: (raw) => {
      if (!conv)
        throw new Error('this run is not a conversation (start one with agentctl start --conversation)');
      conv.validate(raw);
    },
    description:
      "A person's message to a conversation run: {text, messageId, from?, close?}. CLI: agentctl send <run-id> TEXT.",
  });
  setHandler(
    conversationQuery,
    (args) => {
      if (!conv) throw new Error('this run is not a conversation');
      return conv.view(args?.after ?? 0);
    },
    { description: "A conversation run's messages after {after?}, and whether it waits for its person." },
  );

  try {
    return await loop({ input, rawInput, run, gate, step, replies, conv, marks });
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Cancelled (a parent's kill switch, `temporal workflow cancel`): the run and its subtree
    // stop with a StopReport and a checkpoint instead of vanishing (docs/spec.md §7.14).
    return CancellationScope.nonCancellable(async () => {
      await subAgents.settle();
      run.childLift('cancelled while waiting on a sub-agent');
      if (!run.stopped) {
        run.guard.forceStop(GuardReason.OPERATOR_STOP);
        run.note('stop', GuardReason.OPERATOR_STOP, { args: { actor: 'temporal', reason: 'cancelled' } });
        run.stop(
          TerminalState.STOPPED_LOOP_GUARD,
          GuardReason.OPERATOR_STOP,
          null,
          null,
          'the run was cancelled',
        );
      }
      return finishRun(run);
    });
  }
}

/**
 * What one turn came to, the one thing the loop switches on: a call ran (`execute`), was answered
 * from the ledger (`cached`) or steered back to the model (`steer`); the run stopped (`stop`: the
 * stop is in force on the run, whatever stopped it); it is done (`complete`); it waits before the
 * next turn (`wait`: a RETRYABLE backoff or a PENDING re-poll); or nothing ran and the next turn
 * is asked (`next`: a text reply, a person's turn, a stop request that was refused).
 */
type TurnOutcome =
  | { readonly kind: 'execute' | 'cached' | 'steer' | 'stop' | 'next' }
  | { readonly kind: 'complete'; readonly summary: string | null }
  | { readonly kind: 'wait'; readonly ms: number; readonly why: string };

const NEXT: TurnOutcome = { kind: 'next' };
const STOP: TurnOutcome = { kind: 'stop' };

/** What a turn works with. */
interface Loop {
  readonly input: ResolvedRunInput;
  readonly rawInput: RunInput;
  readonly run: RunState;
  readonly gate: RunGate;
  readonly step: RunSteps;
  readonly replies: TextReplies;
  readonly conv: Conversation | null;
  readonly marks: HistoryMarks; // refusals and outcomes that are not a plain success, on the Timeline
}

/** The loop of one run (docs/spec.md §7.9), until its terminal state. */
async function loop(l: Loop): Promise<RunResult> {
  const { input, run, gate, replies } = l;
  const acts = run.activities;
  if (run.needsWorldVersion) run.startAt(await acts.currentProgress());
  run.publish();
  for (;;) {
    // Stopped: wait for a verified resume, then continue from the checkpoint (the planner's
    // next turn is asked afresh: the world may have changed meanwhile).
    if (run.stopped) {
      acts.discardPrefetch();
      replies.forget();
      if (!(await gate.waitForResume(input.resumeWindowMs))) return finishRun(run);
    }
    if (run.historyIsLong()) {
      await continueAsNewOrStop(l);
      continue;
    }
    const next = turn(l);
    let t = next instanceof Promise ? await next : next;
    if (t instanceof Pending) {
      // The tool activity's own promise, awaited here and nowhere else (Pending).
      const pending = t;
      let out: RunToolOutput | undefined;
      let error: unknown;
      let failed = false;
      try {
        out = await pending.promise;
      } catch (err) {
        [error, failed] = [err, true];
      }
      t = failed ? pending.rejected(error) : pending.resolved(out as RunToolOutput);
    }
    if (l.marks.pending) await l.marks.flush(); // a refusal's or an outcome's mark; a healthy step has none
    switch (t.kind) {
      case 'complete':
        return finishRun(run, TerminalState.COMPLETED, t.summary);
      case 'stop':
        // The one place a stop is answered: an LLM run's model gets its final word.
        await finalWord(run);
        break;
      case 'wait': {
        // The server-given wait, as a durable timer that ends early when an operator stops the run.
        acts.discardPrefetch();
        // Waiting is not the agent running: the wait is taken off its wall clock.
        const waitStart = Date.now();
        await gate.sleepUnlessStopped(t.ms, t.why);
        run.guard.discountWait(Date.now() - waitStart);
        break;
      }
      case 'execute':
      case 'cached':
      case 'steer':
      case 'next':
        break;
    }
  }
}

/**
 * A turn's outcome, or the tool activity it still waits on with what its answer comes to: the
 * loop awaits that promise itself (see {@link Pending}).
 */
type Turn = TurnOutcome | Pending<RunToolOutput, TurnOutcome>;

/**
 * One turn: the kill switch, the person's turn, plan, then the guarded step (core/step.ts).
 * Synchronous until something must be waited for, and then the tool activity's own promise,
 * which the loop awaits itself (Pending): the SDK captures a stack trace for every promise
 * workflow code makes (~50 µs each), so a scripted step that made fifteen now makes about
 * four — the activity's own two and the loop's await, as a bare Temporal loop does
 * (test/workflows/step-promises.test.ts counts them).
 */
function turn(l: Loop): Turn | Promise<Turn> {
  const { gate, step, replies, conv } = l;
  // A stop to apply or a person's turn: waited for first (awaitedTurn).
  if (gate.stopRequested || conv) return awaitedTurn(l);
  const planned = step.prefetched();
  if (planned) return proposeAndRun(l, planned);
  return step.plan(replies.nudge, null).then((p) => proposeAndRun(l, p));
}

/** A turn that may wait before it plans: a stop request to apply, a conversation's person. */
async function awaitedTurn(l: Loop): Promise<Turn> {
  const { run, gate, step, replies, conv } = l;
  if (gate.stopRequested && (await gate.applyStopRequest())) return STOP;
  // A conversation hands the turn to the person and waits for their message.
  if (conv?.closeIfAsked()) return run.stopped ? STOP : NEXT;
  if (conv?.waiting && (await conv.wait(gate)) !== 'answered') return run.stopped ? STOP : NEXT;
  // Plan. A proposal that does not run leaves the planner as it was, so a resumed run asks
  // again (the same call may be exactly right once the world has changed).
  return proposeAndRun(l, step.prefetched() ?? (await step.plan(replies.nudge, conv?.userText ?? null)));
}

/** The planner's turn taken: a reply, a finish, or a call through the guard and the tool. */
function proposeAndRun(l: Loop, planned: PlanStep): Turn | Promise<Turn> {
  const { input, run, gate, step, replies, conv } = l;
  if (planned.kind === 'stopped') return STOP; // the planner failed, or a budget ceiling before the call
  conv?.planned(planned.finishing ?? null);
  const { turn: t, proposal: p } = planned;
  if (t.type === 'finish') {
    // In a conversation, a text reply is a message to the person.
    if (conv?.onText(t)) {
      replies.onCall();
      return NEXT;
    }
    // An LLM's text reply is not completion: the model is told, or the run stops.
    if (replies.onFinish(t) !== 'complete') return run.stopped ? STOP : NEXT;
    run.note('complete', 'planner_finished');
    return { kind: 'complete', summary: t.summary };
  }
  replies.onCall();
  if (t.type === 'exhausted' || !p) {
    run.runtimeStop(GuardReason.PLANNER_EXHAUSTED, TerminalState.PARTIAL);
    return STOP;
  }
  // The kill switch is checked after planning too: a stop that arrived while the planner
  // was thinking must still prevent the next tool call.
  if (gate.stopRequested) {
    step.undoTurn();
    return NEXT;
  }
  // `ask_human`, or the finishing tool while the person's messages wait: nothing runs.
  if (conv?.onCall(t, p)) return NEXT;
  const proposal = step.propose(t, p);
  if (!input.guardEnabled) {
    return step
      .passThrough(proposal)
      .then((done): TurnOutcome => (done ? { kind: 'complete', summary: null } : { kind: 'execute' }));
  }

  // Guard, then tool, then guard again.
  const before = step.before(proposal);
  // A steer: nothing ran, the model reads the guard's note as the call's result (§3.3).
  if (before.kind === 'steer' || before.kind === 'stop')
    return l.marks.refused(proposal.p.tool, proposal.p.args, before);
  return step.execute(proposal, before.kind === 'cached', (done) => afterTool(l, proposal, before, done));
}

/** A call the guard let run (or answer from the ledger). */
type ToRun = Extract<BeforeOutcome, { kind: 'execute' | 'cached' }>;

/** guard.after on the tool's result: what the turn came to. */
function afterTool(l: Loop, proposal: Proposal, before: ToRun, done: ToolStep): TurnOutcome {
  if (done.kind === 'stopped') return STOP; // an infrastructure fault stopped the run
  const { result, progressVersion, via } = done;
  l.marks.queue(outcomeMark(proposal.p.tool, result, before.kind === 'cached'));
  const after = l.step.after(proposal, before.before, result, progressVersion, via);
  switch (after.decision) {
    case 'stop':
      return STOP;
    case 'complete':
      return { kind: 'complete', summary: summaryOf(result) };
    case 'retry_after_backoff':
    case 'wait_bounded':
      return {
        kind: 'wait',
        ms: after.retryAfterMs ?? DEFAULT_WAIT_MS,
        why:
          after.decision === 'wait_bounded'
            ? `to poll ${proposal.call.tool} again (PENDING)`
            : `to retry ${proposal.call.tool} (${result.kind}${'code' in result && result.code ? ` ${result.code}` : ''})`,
      };
    default:
      return { kind: before.kind };
  }
}

/**
 * A long history: the run continues as new from its sealed checkpoint, or stops
 * payload_too_large when the checkpoint cannot travel (the loop then waits for a resume).
 */
async function continueAsNewOrStop({ rawInput, run, conv }: Loop): Promise<void> {
  const acts = run.activities;
  await condition(allHandlersFinished);
  // A long script's calls travel by reference from here on (workflows/script-ref.ts).
  const next = await lighterInput(rawInput, workflowInfo().workflowId, acts.storeScript);
  const taken = conv?.version;
  // A checkpoint too large for the new run's input stops the run payload_too_large instead.
  const checkpoint = await sealedCheckpoint(run, { ...next, checkpoint: undefined });
  if (!checkpoint) return;
  // A lean run's trace records that do not travel go to the worker's database.
  if (run.lean) await pageOutTrace(run, checkpoint.trace.length);
  // A person's message taken while it was sealed: sealed again with it (none lost, none twice).
  if (conv && conv.version !== taken) return;
  await continueAsNew<typeof agentRun>({ ...next, checkpoint });
}

/** A terminal tool's `summary`, the run's summary. */
function summaryOf(result: ToolResult): string | null {
  const data = result.kind === 'SUCCESS' ? (result.data as { summary?: unknown } | undefined) : undefined;
  return typeof data?.summary === 'string' ? data.summary : null;
}

/**
 * A checkpoint in the input of a fresh run (`resume --from`) must carry a worker's seal and
 * the right shape; one from this run's own continue-as-new chain is trusted (only the
 * server can set `continuedFromExecutionRunId`). A forged one fails the new run with a
 * clear error before anything is restored; the original run's result is untouched.
 */
async function refuseForgedCheckpoint(checkpoint: unknown, acts: RunActivities): Promise<void> {
  if (checkpoint === undefined) return;
  if (workflowInfo().continuedFromExecutionRunId !== undefined) return;
  const opened = await acts.openCheckpoint(checkpoint);
  if (!opened.ok) throw ApplicationFailure.nonRetryable(opened.detail, 'CheckpointRejected');
}
