/**
 * A final word (docs/spec.md §7.7): when the guard stops an LLM run for a loop reason
 * or a budget (a token or cost budget: in a run that kept room for it), the model gets one more
 * turn with tool use turned off and a small output limit (planners/llm-common.ts
 * `FINAL_WORD_MAX_TOKENS`), asked to tell its user what it did and what is left. Nothing runs in it; its usage is charged to the run; its text is the StopReport's and
 * the result's `final_message`. The run's memory stays as the stop left it (a resume asks the
 * planner from there), and a final turn that fails changes nothing else. Runs recorded before
 * this change replay as they ran (patch `llm-final-word-v1`). Workflow code.
 */
import { ActivityFailure, isCancellation } from '@temporalio/workflow';
import type { RunFacts } from '../common/planner';
import { redactText } from '../common/redact';
import { GuardReason, isBudgetReason, LOOP_REASONS } from '../guard';
import { chargeUnreadableReply } from './plan-failure';
import { failureMessage } from '../core/resume-check';
import type { RunState } from './run-state';

/**
 * Whether a run keeps room for its final word (an LLM run): each model request's money check
 * then reserves the final word's worst case (`RunFacts.reserveFinalWord`).
 */
export function keepsFinalWordRoom(run: RunState): boolean {
  return run.input.planner.kind !== 'scripted';
}

const isMoneyStop = (reason: string) =>
  reason === GuardReason.TOKEN_BUDGET || reason === GuardReason.COST_BUDGET;

/**
 * Whether a stop gets a final word: an LLM run stopped by a loop rule or a budget (a token or
 * cost budget within the room the run kept for it).
 */
function wantsFinalWord(run: RunState): boolean {
  const stop = run.stopInForce;
  if (!stop || run.input.planner.kind === 'scripted') return false;
  if (isMoneyStop(stop.reason)) return keepsFinalWordRoom(run);
  return isBudgetReason(stop.reason) || LOOP_REASONS.has(stop.reason);
}

/**
 * The money a final word may use: after a token or cost stop, what the run's caps have left (the
 * room its requests kept), so the cap holds; after any other stop none is set (the final word is
 * outside the run's ceilings, bounded by its output limit).
 */
function moneyLeft(run: RunState, reason: string): RunFacts['budgetsLeft'] {
  if (!isMoneyStop(reason)) return {};
  const c = run.guard.config;
  const used = run.guard.usage;
  return {
    ...(Number.isFinite(c.maxTokens) ? { tokens: Math.max(0, c.maxTokens - used.tokens) } : {}),
    ...(Number.isFinite(c.maxCostUsd) ? { costUsd: Math.max(0, c.maxCostUsd - used.costUsd) } : {}),
  };
}

/** Asks the model for its final word after a guard stop (see the module comment). */
export async function finalWord(run: RunState): Promise<void> {
  if (!wantsFinalWord(run)) return;
  const stop = run.stopInForce!;
  try {
    // After a loop, step or time stop the final word is outside the run's ceilings (bounded by its
    // small output limit); after a money stop it has what the caps left. Always under the tenant's limit.
    const facts: RunFacts = {
      steps: run.guard.stepCount,
      progressVersion: run.guard.progressVersion,
      completedOperations: 0,
      recentCompleted: [],
      stops: [],
      refusedResumes: [],
      budgetsLeft: moneyLeft(run, stop.reason),
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
