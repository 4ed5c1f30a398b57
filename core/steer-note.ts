/**
 * The guard note a steered refusal sends back to the model as the refused call's tool result
 * (docs/spec.md §3.3): which rule refused it (its reason code), on what evidence, the earlier
 * result when the run has it, and what would count as progress. Nothing ran. Workflow code.
 */
import type { GuardNote, Observation } from '../common/planner';
import { GuardReason, type ProgressSteer, type SteerDecision, type ToolResult } from '../guard';

/** The most characters of an earlier result the note repeats (the model saw it in full before). */
const MAX_EARLIER_RESULT_CHARS = 2_000;

/** How many calls a run remembers for its notes, and how many steps of each. */
const CALLS_KEPT = 32;
const STEPS_KEPT = 5;

/**
 * Recent calls by the guard's window key (the near-repeat key, else the fingerprint), so a
 * reworded repeat's note quotes the call it repeats: their last result and the steps they ran
 * at. In workflow memory only: rebuilt on replay, empty after a continue-as-new.
 */
export class RecentCalls {
  private readonly calls = new Map<string, { result: ToolResult; steps: number[] }>();

  get(key: string): { readonly result: ToolResult; readonly steps: readonly number[] } | undefined {
    return this.calls.get(key);
  }

  /** Keeps a call's result and step; the oldest call goes past {@link CALLS_KEPT}. */
  remember(key: string, result: ToolResult, step: number): void {
    const steps = [...(this.calls.get(key)?.steps ?? []), step].slice(-STEPS_KEPT);
    this.calls.delete(key);
    this.calls.set(key, { result, steps });
    if (this.calls.size > CALLS_KEPT) this.calls.delete(this.calls.keys().next().value!);
  }
}

/** What the run knows about the refused call. */
export interface SteerEvidence {
  readonly callId?: string;
  readonly tool: string;
  readonly steer: SteerDecision;
  readonly steerLimit: number;
  readonly earlierSteps: readonly number[];
  /** The call's last result (undefined: the run does not have it any more). */
  readonly earlierResult?: unknown;
  /** For `precondition_unchanged`: what the call still lacks. */
  readonly unmet?: string | null;
}

function words(e: SteerEvidence): { what: string; progress: string } {
  const at = e.earlierSteps.length > 0 ? ` (steps ${e.earlierSteps.join(', ')})` : '';
  switch (e.steer.reason) {
    case GuardReason.SHORT_CYCLE:
      return {
        what: `your calls alternate between two calls A-B-A-B without progress; this ${e.tool} call would repeat the cycle${at}`,
        progress:
          'a call outside the cycle (another tool or other args) that learns or changes something, or finishing',
      };
    case GuardReason.NEAR_CALL_REPEAT:
      return {
        what: `this ${e.tool} call asks, in other words, what an earlier one already asked; it ran ${e.steer.count} time${e.steer.count === 1 ? '' : 's'}${at} without progress`,
        progress:
          'a call that asks for something else (other words that change the request, another tool) or finishing',
      };
    case GuardReason.REAPPLIED_EDIT:
      return {
        what: `this exact ${e.tool} call changed the workspace ${e.steer.count} times in a row${at} and each time the workspace only grew: the edit is being applied again on top of itself (a file gaining its own duplicate)`,
        progress:
          'reading the file to see what it holds now, an edit with other args (e.g. one that removes the duplicate), or finishing',
      };
    case GuardReason.PRECONDITION_UNCHANGED:
      return {
        what: `this exact ${e.tool} call already failed its precondition${at}${e.unmet ? ` (${e.unmet})` : ''} and nothing has changed since`,
        progress: 'a call that changes what the precondition needs, a different call, or finishing',
      };
    default:
      return {
        what: `this exact ${e.tool} call (same args) already ran ${e.steer.count} time${e.steer.count === 1 ? '' : 's'}${at} without progress`,
        progress: 'a different call (other args or another tool) whose result is new, a write, or finishing',
      };
  }
}

/** The observation a steered refusal answers the call with. */
export function steerObservation(e: SteerEvidence): Observation {
  const { what, progress } = words(e);
  const left = Math.max(0, e.steerLimit - e.steer.steers);
  const stop =
    left === 0
      ? 'the next refusal stops the run'
      : `${left} more refusal(s) will be explained, then the run stops`;
  const note = `guard ${e.steer.reason}: ${what}. It was not run again. Progress would be ${progress}; ${stop}.`;
  const guard: GuardNote = {
    rule: e.steer.reason,
    note,
    times: e.steer.count,
    earlierSteps: [...e.earlierSteps],
    ...(e.earlierResult !== undefined ? { earlierResult: bounded(e.earlierResult) } : {}),
    progress,
    steersLeft: left,
  };
  return {
    tool: e.tool,
    kind: 'PRECONDITION',
    code: e.steer.reason,
    unmet: note,
    guard,
    ...(e.callId ? { callId: e.callId } : {}),
  };
}

/** An earlier result as the note repeats it: whole when short, else a prefix of its JSON. */
function bounded(v: unknown): unknown {
  const json = JSON.stringify(v) ?? 'null';
  return json.length <= MAX_EARLIER_RESULT_CHARS
    ? v
    : { preview: json.slice(0, MAX_EARLIER_RESULT_CHARS), truncated: true };
}

/** What the run knows about the calls without progress when `no_progress` gives its note. */
export interface ProgressEvidence {
  readonly steer: ProgressSteer;
  /** The calls of the window without progress, oldest first (the newest few): tool and step. */
  readonly calls: readonly { readonly tool: string; readonly step: number }[];
  /** The progress version that has not moved. */
  readonly progressVersion: number;
  /** The repeat rules' steers the run has left. */
  readonly steersLeft: number;
}

/**
 * The call's own observation with the `no_progress` note (docs/spec.md §3 "Steering"):
 * the call ran and its result is the model's; the note says what has not changed and what would
 * count as progress, before the stop that comes after `callsLeft` more calls without progress.
 */
export function withProgressNote(obs: Observation, e: ProgressEvidence): Observation {
  const calls = e.calls.slice(-STEPS_KEPT);
  const list = calls.map((c) => `${c.tool} (step ${c.step})`).join(', ');
  const progress =
    'a call whose result is new (something not read before in this run), a write that succeeds, or finishing if the task is done';
  const note =
    `guard no_progress: your last ${e.steer.count} calls${list ? ` (${list})` : ''} learned nothing new and changed nothing ` +
    `(progress version still ${e.progressVersion}); this result is given, but ${e.steer.callsLeft} more call(s) without progress stop the run. ` +
    `Progress would be ${progress}.`;
  const guard: GuardNote = {
    rule: GuardReason.NO_PROGRESS,
    note,
    times: e.steer.count,
    earlierSteps: calls.map((c) => c.step),
    progress,
    steersLeft: e.steersLeft,
  };
  return { ...obs, guard };
}
