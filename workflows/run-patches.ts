/**
 * Every `patched()` id of the agent-run workflow, in one place. Each marks a change of the
 * commands a run makes: a run recorded before the change replays the old path, a new run
 * takes the new one (docs/spec.md §7; test/fixtures/histories replay both). An id is never
 * renamed or reused; a new change gets a new id.
 *
 * A run started on this code asks one patch, {@link PATCH_BASELINE}, first thing, and takes every
 * id of {@link BASELINE_PATCHES} without a marker of its own ({@link Patches}); a run recorded
 * before the baseline asks each of them where it always did. A change after the baseline calls
 * `patched()` with its own id, as before.
 */
import { patched } from '@temporalio/workflow';

/** A fresh run verifies the seal of a checkpoint it is given (docs/spec.md §7.10). */
export const PATCH_SEALED_CHECKPOINTS = 'sealed-checkpoints-v1';

/** Search attributes are no longer upserted after every step (docs/performance.md). */
export const PATCH_NO_STEP_UPSERT = 'no-search-attribute-upsert-per-step';

/**
 * Operator requests are verified by an activity (signature and role), a raise is for the
 * stopping budget only, a planner_failed stop needs a health check, a stop while a resume
 * is verified vetoes it, and checkpoints are sealed.
 */
export const PATCH_AUTHORITY = 'operator-authority-v1';

/** The seal activity answers the seal only, not the sealed checkpoint (issue 9). */
export const PATCH_LEAN_SEAL = 'lean-checkpoint-seal-v1';

/** A progress version that goes backwards stops the run infrastructure_fault (issue 16). */
export const PATCH_PROGRESS_MONOTONIC = 'progress-monotonic-v1';

/** A fresh LLM run steers before it stops: `steerLimit` defaults to 2 (issue 17, docs/spec.md §3.3). */
export const PATCH_STEER_DEFAULT = 'llm-steer-default-v1';

/**
 * A cancelled run (its parent's kill switch, `temporal workflow cancel`) ends STOPPED_LOOP_GUARD
 * `operator_stop` with its StopReport and checkpoint instead of as a bare cancellation (issue 18).
 */
export const PATCH_CANCEL_STOPS = 'cancel-stops-run-v1';

/**
 * A resume window that runs out while a resume is being verified waits for that verification:
 * an accepted resume lifts the stop instead of being answered `accepted` by a closing run (issue 19).
 */
export const PATCH_RESUME_WINDOW_WAITS = 'resume-window-waits-check-v1';

/**
 * A checkpoint of constant size (issue 19): a live run's guard keeps only its newest
 * ledger-backed completed keys (the ledger hands older ones back when proposed again), the
 * checkpoint carries the newest 100 decisions and request ids and a 16 KB trace, and the
 * trace records that leave it are kept in the worker's database at each continue-as-new.
 */
export const PATCH_LEAN_CHECKPOINT = 'lean-checkpoint-v2';

/**
 * A scripted run's `plan` is a local activity, run inside the workflow task that asked for it:
 * one workflow task and one server round trip less per step (issue 19). The LLM plan stays an
 * activity.
 */
export const PATCH_LOCAL_SCRIPTED_PLAN = 'scripted-plan-local-activity-v1';

/**
 * A scripted run's next turn is planned by the `runTool` activity that ran the call before it,
 * and handed back with the tool's result: no plan task of its own per step (issue 19). A turn
 * the prefetch could not plan (a stop between, an approval, the ledger unreadable) asks `plan`.
 */
export const PATCH_PREFETCH_SCRIPTED_PLAN = 'scripted-plan-prefetch-v1';

/**
 * An LLM run decides at the `llm` profile (guard/profiles.ts: steps, wall clock, tokens, cost,
 * limits, failure memory) and hands tool errors the tool did not declare back to its model as
 * PRECONDITION `tool_error` (issue 29). Asked once per LLM run, never by a scripted run.
 */
export const PATCH_LLM_PROFILE = 'llm-profile-v1';

/**
 * The time a run waits on a durable timer (a PENDING re-poll, a RETRYABLE backoff) is taken off
 * its wall clock (issue 29, docs/spec.md §3 rule 2). Asked at a run's first such wait.
 */
export const PATCH_WAIT_OFF_CLOCK = 'wait-off-wall-clock-v1';

/**
 * Every patch above, taken at once (issue 19): a run started on this code asks this one patch
 * first thing and takes all of {@link BASELINE_PATCHES} without asking them. Each `patched()`
 * that a fresh run takes costs two history events and a visibility write (the marker, and the
 * SDK core's upsert of `TemporalChangeVersion`): a short live run took four of them (eight of its
 * 28 events), and a run with the guard on one more than a run with it off. Runs recorded before
 * replay each patch by its own marker.
 */
export const PATCH_BASELINE = 'patch-baseline-v1';

/**
 * An LLM run's reply without a tool call is not completion (issue 30): the model is told so up
 * to `textReplyLimit` times, then the run ends PARTIAL `model_stopped`; a truncated reply stops
 * it NEEDS_HUMAN `model_output_truncated`. Asked at the first such reply (after the baseline).
 */
export const PATCH_TEXT_NOT_COMPLETION = 'llm-text-reply-not-completion-v1';

/**
 * An LLM turn's usage is charged to the run as soon as the planner answers, before any rule
 * decides (issue 30): a final text, a proposal a budget or the kill switch refuses, all count.
 */
export const PATCH_USAGE_FIRST = 'llm-usage-before-decision-v1';

/**
 * When the guard stops an LLM run for a loop or budget reason, the model gets one tool-less turn
 * to tell its user what it did (issue 30): its text is the StopReport's `final_message`.
 */
export const PATCH_FINAL_WORD = 'llm-final-word-v1';

/**
 * A model reply that was billed but could not be read (the plan activity fails
 * `UnreadableReplyError` with the reply's usage in its details) is charged to the run before it
 * stops `planner_failed`, or before a failed final word is noted (issue 30). Asked only there.
 */
export const PATCH_UNREADABLE_USAGE = 'llm-unreadable-reply-usage-v1';

/**
 * An LLM run keeps room for its final word (issue 30): every model request's check against the
 * tokens and cost left also reserves the final word's worst case (`RunFacts.reserveFinalWord`),
 * and a `token_budget` / `cost_budget` stop gets the final word within what is left. Asked at
 * each LLM plan (its marker at the first) and at a money stop.
 */
export const PATCH_FINAL_WORD_ROOM = 'llm-final-word-room-v1';

/** The patches a run on {@link PATCH_BASELINE} takes without a marker each (not the two after it). Never changes. */
export const BASELINE_PATCHES = [
  PATCH_SEALED_CHECKPOINTS,
  PATCH_NO_STEP_UPSERT,
  PATCH_AUTHORITY,
  PATCH_LEAN_SEAL,
  PATCH_PROGRESS_MONOTONIC,
  PATCH_STEER_DEFAULT,
  PATCH_CANCEL_STOPS,
  PATCH_RESUME_WINDOW_WAITS,
  PATCH_LEAN_CHECKPOINT,
  PATCH_LOCAL_SCRIPTED_PLAN,
  PATCH_PREFETCH_SCRIPTED_PLAN,
] as const;

/** One of {@link BASELINE_PATCHES}. */
export type BaselinePatch = (typeof BASELINE_PATCHES)[number];

/** Which of the baseline's changes a run takes: all of them, or each as its history says. */
export class Patches {
  private constructor(
    /** The run started on the baseline (or replays a history that did). */
    readonly baseline: boolean,
  ) {}

  /** Asks {@link PATCH_BASELINE}: once per run, first thing in its first workflow task. */
  static atStart(): Patches {
    return new Patches(patched(PATCH_BASELINE));
  }

  /** `patched(id)` for a run from before the baseline; true, without a marker, for one on it. */
  has(id: BaselinePatch): boolean {
    return this.baseline || patched(id);
  }

  private llm: boolean | undefined;
  private offClock: boolean | undefined;

  /** {@link PATCH_LLM_PROFILE} for an LLM run (asked once, at its first question); false for a scripted one. */
  llmProfile(isLlmRun: boolean): boolean {
    if (!isLlmRun) return false;
    this.llm ??= patched(PATCH_LLM_PROFILE);
    return this.llm;
  }

  /** {@link PATCH_WAIT_OFF_CLOCK}, asked at the run's first durable wait. */
  waitOffClock(): boolean {
    this.offClock ??= patched(PATCH_WAIT_OFF_CLOCK);
    return this.offClock;
  }
}

/**
 * A long plain script's calls go to the payload store at a run's continue-as-new, and the next
 * run carries their reference (issue 32): the script no longer crosses every continue-as-new
 * whole. After the baseline: asked at a continue-as-new of a run whose inline calls are long.
 */
export const PATCH_SCRIPT_BY_REF = 'script-by-reference-v1';
