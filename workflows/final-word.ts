/**
 * A final word (issue 30, docs/spec.md §7.7): when the guard stops an LLM run for a loop reason
 * or the step, wall-clock or wait budget, the model gets one more turn with tool use turned off and a small output limit
 * (planners/llm-common.ts `FINAL_WORD_MAX_TOKENS`), asked to tell its user what it did and what
 * is left. Nothing runs in it; its usage is charged to the run; its text is the StopReport's and
 * the result's `final_message`. The run's memory stays as the stop left it (a resume asks the
 * planner from there), and a final turn that fails changes nothing else. Runs recorded before
 * this change replay as they ran (patch `llm-final-word-v1`). Workflow code.
 */
import { ActivityFailure, isCancellation, patched } from '@temporalio/workflow';
import { redactText } from '../common/redact';
import { GuardReason, isBudgetReason, LOOP_REASONS } from '../guard';
import { chargeUnreadableReply } from './plan-failure';
import { failureMessage } from './resume-check';
import { PATCH_FINAL_WORD } from './run-patches';
import type { RunState } from './run-state';

/**
 * Whether a stop gets a final word: an LLM run stopped by a loop rule or the step, wall-clock or
 * wait budget. A token or cost budget gets none: the run's money cap holds to the request (no
 * allowance is reserved for a last turn yet).
 */
function wantsFinalWord(run: RunState): boolean {
  const stop = run.stopInForce;
  if (!stop || run.input.planner.kind === 'scripted') return false;
  if (stop.reason === GuardReason.TOKEN_BUDGET || stop.reason === GuardReason.COST_BUDGET) return false;
  return isBudgetReason(stop.reason) || LOOP_REASONS.has(stop.reason);
}

/** Asks the model for its final word after a guard stop (see the module comment). */
export async function finalWord(run: RunState): Promise<void> {
  if (!wantsFinalWord(run) || !patched(PATCH_FINAL_WORD)) return;
  const stop = run.stopInForce!;
  try {
    // The run loops or its steps or time are spent: the final word is outside the run's ceilings
    // (bounded by its small output limit) but still under the tenant's spend limit.
    const facts = {
      steps: run.guard.stepCount,
      progressVersion: run.guard.progressVersion,
      completedOperations: 0,
      recentCompleted: [],
      stops: [],
      refusedResumes: [],
      budgetsLeft: {},
    };
    const out = await run.activities.planTurn(run.memory, run.observation, facts, null, null, {
      reason: stop.reason,
    });
    const usage = out.turn.usage;
    run.guard.charge({ steps: 0, tokens: usage.tokens, costUsd: usage.costUsd });
    if (out.turn.type !== 'finish' || run.stopInForce !== stop) return;
    const message = redactText(out.turn.summary);
    stop.report = { ...stop.report, final_message: message };
    run.note('final_word', stop.reason);
  } catch (err) {
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    chargeUnreadableReply(run, err);
    run.note('final_word_failed', failureMessage(err));
  }
}
