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
import {
  checkpointQuery,
  reportQuery,
  resumeSignal,
  resumeUpdate,
  runInputSchema,
  statusQuery,
  stopSignal,
  stopUpdate,
  traceQuery,
  type ResolvedRunInput,
  type RunInput,
  type RunResult,
} from '../common/contracts';
import { childEventSignal } from '../common/sub-agents';
import { conversationQuery, messageUpdate } from '../common/conversation-run';
import { Conversation } from './conversation';
import { GuardReason, TerminalState, type ToolResult } from '../guard';
import { runActivities, type RunActivities } from './run-activities';
import { RunGate } from './run-gate';
import { PATCH_CANCEL_STOPS, PATCH_SEALED_CHECKPOINTS, Patches } from './run-patches';
import { RunState } from './run-state';
import { RunSteps } from './run-steps';
import { lighterInput } from './script-ref';
import { checkpointOf, reportOf, statusOf, traceOf } from './run-views';
import { SubAgents } from './sub-agents';
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
  // First thing: the one patch a run on this code records (workflows/run-patches.ts).
  const patches = Patches.atStart();
  const acts = runActivities(input, workflowInfo().workflowId, patches);
  await refuseForgedCheckpoint(input.checkpoint, acts, patches);
  const run = new RunState(input, workflowInfo().workflowId, acts, patches);
  const gate = new RunGate(run, acts);
  const subAgents = new SubAgents(run, gate);
  const step = new RunSteps(run, acts, subAgents);
  const replies = new TextReplies(run);
  const conv = Conversation.of(run);
  setHandler(childEventSignal, (e) => subAgents.onChildEvent(e));
  setHandler(resumeSignal, (raw) => gate.onResumeSignal(raw));
  setHandler(resumeUpdate, (raw) => gate.resume(raw), { validator: (raw) => gate.validateResume(raw) });
  setHandler(stopSignal, (raw) => gate.onStopSignal(raw));
  // Registering a handler adds no command: recorded histories replay unchanged (a run only
  // records an update it is sent).
  setHandler(stopUpdate, (raw) => gate.stop(raw), { validator: (raw) => gate.validateStop(raw) });
  setHandler(statusQuery, () => statusOf(run));
  setHandler(reportQuery, () => reportOf(run));
  setHandler(checkpointQuery, () => checkpointOf(run));
  setHandler(traceQuery, (args) => traceOf(run, args));
  // A person's message (issue 33): refused by the validator on a run that is not a conversation.
  setHandler(messageUpdate, (raw) => conv!.onMessage(raw), {
    validator: (raw) => {
      if (!conv)
        throw new Error('this run is not a conversation (start one with agentctl start --conversation)');
      conv.validate(raw);
    },
  });
  setHandler(conversationQuery, (args) => {
    if (!conv) throw new Error('this run is not a conversation');
    return conv.view(args?.after ?? 0);
  });

  try {
    return await loop(input, rawInput, run, gate, step, replies, conv);
  } catch (err) {
    if (!isCancellation(err) || !patches.has(PATCH_CANCEL_STOPS)) throw err;
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
      return run.finish();
    });
  }
}

/** The loop of one run (docs/spec.md §7.9), until its terminal state. */
async function loop(
  input: ResolvedRunInput,
  rawInput: RunInput,
  run: RunState,
  gate: RunGate,
  step: RunSteps,
  replies: TextReplies,
  conv: Conversation | null,
): Promise<RunResult> {
  const acts = run.activities;
  if (run.needsWorldVersion) run.startAt(await acts.currentProgress());
  run.publish();
  for (;;) {
    // Stopped: wait for a verified resume, then continue from the checkpoint (the planner's
    // next turn is asked afresh: the world may have changed meanwhile).
    if (run.stopped) {
      acts.discardPrefetch();
      replies.forget();
    }
    if (run.stopped && !(await gate.waitForResume())) return run.finish();
    if (run.historyIsLong()) {
      await condition(allHandlersFinished);
      // A long script's calls travel by reference from here on (issue 32, workflows/script-ref.ts).
      const next = await lighterInput(rawInput, workflowInfo().workflowId, acts.storeScript);
      const taken = conv?.version;
      // A checkpoint too large for the new run's input stops the run payload_too_large instead.
      const checkpoint = await run.sealedCheckpoint({ ...next, checkpoint: undefined });
      if (checkpoint) {
        // A lean run's trace records that do not travel go to the worker's database (issue 19).
        if (run.lean) await run.pageOutTrace(checkpoint.trace.length);
        // A person's message taken while it was sealed: sealed again with it (none lost, none twice).
        if (conv && conv.version !== taken) continue;
        await continueAsNew<typeof agentRun>({ ...next, checkpoint });
      }
      continue;
    }
    if (await gate.applyStopRequest()) continue;
    // A conversation hands the turn to the person and waits for their message (issue 33).
    if (conv?.closeIfAsked()) continue;
    if (conv?.waiting && (await conv.wait(gate)) !== 'answered') continue;

    // Plan. A proposal that does not run leaves the planner as it was, so a resumed run asks
    // again (the same call may be exactly right once the world has changed).
    const planned = await step.plan(replies.nudge, conv?.userText ?? null);
    if (planned.kind === 'planned') conv?.planned();
    if (planned.kind === 'stopped') {
      await finalWord(run); // a budget ceiling before the call: the model's final word
      continue;
    }
    const { turn, proposal: p } = planned;
    if (turn.type === 'finish') {
      // In a conversation, a text reply is a message to the person (issue 30 item 1, issue 33).
      if (conv?.onText(turn)) {
        replies.onCall();
        continue;
      }
      // An LLM's text reply is not completion (issue 30): the model is told, or the run stops.
      const end = replies.onFinish(turn);
      if (end !== 'complete') continue;
      run.note('complete', 'planner_finished');
      return run.finish(TerminalState.COMPLETED, turn.summary);
    }
    replies.onCall();
    if (turn.type === 'exhausted' || !p) {
      run.runtimeStop(GuardReason.PLANNER_EXHAUSTED, TerminalState.PARTIAL);
      continue;
    }
    // The kill switch is checked after planning too: a stop that arrived while the planner
    // was thinking must still prevent the next tool call.
    if (gate.stopRequested) {
      step.undoTurn();
      continue;
    }
    // `ask_human`, or the finishing tool while the person's messages wait: nothing runs (issue 41).
    if (conv?.onCall(turn, p)) continue;
    const proposal = step.propose(turn, p);
    if (!input.guardEnabled) {
      if (await step.passThrough(proposal)) return run.finish(TerminalState.COMPLETED);
      continue;
    }

    // Guard, then tool, then guard again.
    const before = step.before(proposal);
    // A steer: nothing ran, the model reads the guard's note as the call's result (§3.3).
    if (before.decision === 'stop') await finalWord(run);
    if (before.decision === 'stop' || before.decision === 'steer') continue;
    const done = await step.execute(proposal, before.decision === 'return_cached_success');
    if (done.kind === 'stopped') continue; // an infrastructure fault stopped the run
    const { result, progressVersion } = done;
    const after = step.after(proposal, before, result, progressVersion);
    if (after.decision === 'stop') {
      await finalWord(run);
      continue;
    }
    if (after.decision === 'complete') return run.finish(TerminalState.COMPLETED, summaryOf(result));
    if (after.decision === 'retry_after_backoff' || after.decision === 'wait_bounded') {
      // The server-given wait, as a durable timer that ends early when an operator stops the run.
      acts.discardPrefetch();
      // Waiting is not the agent running: the wait is taken off its wall clock (issue 29).
      const offClock = run.patches.waitOffClock();
      const waitStart = Date.now();
      await condition(() => gate.stopRequested, after.retryAfterMs ?? DEFAULT_WAIT_MS);
      if (offClock) run.guard.discountWait(Date.now() - waitStart);
    }
  }
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
async function refuseForgedCheckpoint(
  checkpoint: unknown,
  acts: RunActivities,
  patches: Patches,
): Promise<void> {
  if (checkpoint === undefined || !patches.has(PATCH_SEALED_CHECKPOINTS)) return;
  if (workflowInfo().continuedFromExecutionRunId !== undefined) return;
  const opened = await acts.openCheckpoint(checkpoint);
  if (!opened.ok) throw ApplicationFailure.nonRetryable(opened.detail, 'CheckpointRejected');
}
