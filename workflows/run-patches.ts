/**
 * Every `patched()` id of the agent-run workflow, in one place. Each marks a change of the
 * commands a run makes: a run recorded before the change replays the old path, a new run
 * takes the new one (docs/spec.md §7; test/fixtures/histories replay both). An id is never
 * renamed or reused; a new change gets a new id.
 */

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
