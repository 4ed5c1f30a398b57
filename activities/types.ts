/**
 * Inputs and outputs of the activities the workflow calls. The workflow imports this
 * file as types only.
 */
import type { ModelNudge, PlannerSpec, PlannerTurn, RunFacts } from '../common/planner';
import type { ToolResult } from '../guard';
import type { NormalizedProposal } from '../tools/registry';
import type { PrefetchedTurn } from '../common/prefetched-turn';
import type { ResumeObservation } from '../core/resume-note';

/** Input of the `plan` activity. */
export interface PlanInput {
  readonly runId: string;
  readonly goal: string;
  readonly planner: PlannerSpec;
  readonly memory: unknown;
  readonly observation: unknown;
  /** What the run knows about itself, for a compacted request's run-state note. */
  readonly facts?: RunFacts | null;
  /**
   * The stop the run has just lifted by a resume (its `last_safe_checkpoint`), while the call
   * it was blocked on has not run yet: only an approval granted for this stop is offered.
   * Absent or null: no approval is offered (a call that needs one stops `approval_required`).
   */
  readonly approvalStopRef?: string | null;
  /** The tools the run may use (RunInput `tools`); absent: every tool the worker hosts. */
  readonly tools?: readonly string[] | null;
  /** The run may delegate with `spawn_agent` (RunInput `subAgents`, docs/spec.md §7.14). */
  readonly spawnAgents?: boolean;
  /** A conversation run: `ask_human` is offered. */
  readonly askHuman?: boolean;
  /** A conversation run: the person's message, the next user turn after the model's text reply. */
  readonly userText?: string;
  /** The tenant the run's model calls bill to (its spend limit); absent: `default`. */
  readonly tenant?: string;
  /**
   * A scripted run whose `script.calls` is a payload reference: the index of the
   * call this turn proposes; the activity reads that one call from the store.
   */
  readonly scriptAt?: number;
  /** The model's last reply had no tool call: what the planner tells it. */
  readonly nudge?: ModelNudge;
  /** One model request's timeout in ms: the SDK's, within the activity's own. */
  readonly requestTimeoutMs?: number;
  /** The guard stopped the run: the model's final word, no tool runs. */
  readonly finalWord?: { readonly reason: string };
  /**
   * A resume was accepted since the model's last turn: what it is told first (who resumed, the
   * note, what was verified and the fresh result; core/resume-note.ts).
   */
  readonly resumeNote?: string;
}

/** A proposed call, validated and fingerprinted by the activity, with what the ledger knows. */
export interface ProposalInfo extends NormalizedProposal {
  /**
   * What the persistent ledger already knows about the operation key. `fingerprint` is this
   * proposal's own fingerprint when the stored record is the same call (same SHA-256 args
   * hash, or a pre-upgrade row with the same fingerprint), else a value no fingerprint can
   * equal (the stored `sha256:…` hash) so the guard stops with `idempotency_conflict`.
   */
  readonly ledger: {
    readonly state: string;
    readonly fingerprint: string;
    readonly result: unknown;
    /**
     * For a record of another call (an `idempotency_conflict`): the run holding the key and its
     * tool (the StopReport names them). Absent for the same call.
     */
    readonly holder?: { readonly runId: string; readonly tool: string };
  } | null;
  /** Script mode: the file's answer for this proposal. */
  readonly fixture: { readonly result: ToolResult | null; readonly progressVersion: number | null } | null;
  /**
   * Whether the call needs a person's approval before it runs, and the id of a valid
   * approval for this run and this call's fingerprint, if one exists (docs/spec.md §7).
   */
  readonly approval?: {
    readonly required: boolean;
    readonly approvalId: string | null;
    /** The stop the offered approval was granted for (sent back to `runTool`, which checks it). */
    readonly stopRef?: string | null;
  } | null;
}

/** Output of the `plan` activity. */
export interface PlanOutput {
  readonly turn: PlannerTurn;
  readonly memory: unknown;
  readonly proposal: ProposalInfo | null;
  /**
   * A conversation run (`askHuman`): the name of the finishing tool this worker offers the run
   * (its registry's `finishing`: `complete_task`, renamed or replaced). The conversation holds
   * that call back while the person's messages are queued. Absent when there is none.
   */
  readonly finishing?: string;
}

/** Input of the `runTool` activity. */
export interface RunToolInput {
  readonly runId: string;
  readonly tool: string;
  readonly args: unknown;
  readonly operationKey: string | null;
  /**
   * The guard's fingerprint of the call. The workflow no longer sends it (only what
   * the workflow decides with crosses history); absent, the activity computes it from the args,
   * as the plan did (the same registry, the same canonical form).
   */
  readonly fingerprint?: string;
  /** The approval this call runs under (consumed by the activity before the tool runs). */
  readonly approvalId?: string | null;
  /** The stop the approval was granted for: `runTool` uses it only at that stop. */
  readonly approvalStopRef?: string | null;
  /**
   * `sha256:<hex>` of the canonical call, the ledger's args hash (docs/spec.md §8). Absent
   * (the workflow no longer sends it): the activity computes it from `args`.
   */
  readonly argsHash?: string;
  /** Script mode: answer with this instead of running a tool. */
  readonly fixture: { readonly result: ToolResult | null; readonly progressVersion: number | null } | null;
  /**
   * A scripted run's next planner turn, planned by this activity once the tool has answered
   * (no plan task of its own per step). Only a scripted planner's input; the answer
   * comes back as {@link RunToolOutput.next}.
   */
  readonly prefetch?: PrefetchInput;
  /**
   * `model` (an LLM run on `llm-profile-v1`): a failure the tool did not declare (a
   * plain Error, an MCP `isError` without `onError`) comes back as PRECONDITION `tool_error`
   * for the model to handle (tools/tool-errors.ts). Absent: FATAL `tool_error`, as before.
   */
  readonly toolErrors?: 'model';
}

/**
 * The next turn's plan input as `runTool` is sent it: without what is the same for every
 * prefetched turn (the run id is the call's, the goal empty, the memory `{ next: 0 }`, no
 * observation), which the activity fills back in (small step payloads). A full
 * {@link PlanInput} (a history recorded before) is taken as it is.
 */
export type PrefetchInput = Omit<PlanInput, 'runId' | 'goal' | 'memory' | 'observation'> &
  Partial<Pick<PlanInput, 'runId' | 'goal' | 'memory' | 'observation'>>;

/** Output of the `runTool` activity. */
export interface RunToolOutput {
  readonly result: ToolResult;
  /** The run's progress version after the call, read from external state; null in script mode. */
  readonly progressVersion: number | null;
  /**
   * `executed`: the tool ran; `ledger`: the stored result, zero calls; `reconciled`: the tool's
   * `reconcile` probe settled a write an earlier attempt dispatched and lost, zero calls;
   * `fixture`: script mode.
   */
  readonly via: 'executed' | 'ledger' | 'reconciled' | 'fixture' | 'not_run';
  /** An `idempotency_conflict` of the ledger: the run holding the key and its tool. */
  readonly holder?: { readonly runId: string | null; readonly tool: string };
  /**
   * The planned next turn asked for by {@link RunToolInput.prefetch}, exactly what the `plan`
   * activity would answer now; absent when it could not be planned here (the ledger unreadable,
   * an approval to ask for, too large): the workflow then asks `plan` as usual. Copies of the
   * args equal to the proposal's are sent once (common/prefetched-turn.ts).
   */
  readonly next?: PrefetchedTurn;
}

/** Input of the `verifyPrecondition` activity. */
export interface VerifyInput {
  readonly runId: string;
  readonly reason: string;
  readonly checkpointProgressVersion: number;
  readonly blockedTool: string | null;
  /** Args of the call that ended the run (re-checked by the tool's `checkPrecondition`). */
  readonly blockedArgs?: unknown;
  readonly operationKey: string | null;
  readonly precondition: string;
  /** The fingerprint of the call that ended the run (an approval is bound to it). */
  readonly blockedFingerprint?: string | null;
  /** The stop's `last_safe_checkpoint` (an approval is bound to the stop it was granted for). */
  readonly stopRef?: string | null;
  /** The stop's unmet precondition: an `unknown_tool` stop is lifted by registering the tool. */
  readonly unmet?: string | null;
}

/** Output of the `verifyPrecondition` activity. */
export interface VerifyOutput {
  readonly changed: boolean;
  readonly progressVersion: number;
  readonly detail: string;
  /**
   * What the check read now, told to the model with the resume (core/resume-note.ts): the
   * blocked call's fresh result when the check re-ran it. Bounded and redacted by the worker.
   */
  readonly observed?: ResumeObservation;
}
