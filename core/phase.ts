/**
 * The phases of one agent run (docs/spec.md §7) and the only moves between them:
 *
 * ```text
 *   RUNNING ──stop()──▶ STOPPED ──(resumable)──▶ WAITING ──lift()──▶ RUNNING
 *      │                   │                        │
 *      └─────finish()──────┴────────finish()────────┘──▶ COMPLETED | STOPPED_LOOP_GUARD
 *                                                       | NEEDS_HUMAN | FAILED | PARTIAL
 * ```
 *
 * `stop()`, `wait()`, `lift()` are core/run.ts's, `finish()` an engine's (workflows/run-state.ts);
 * the wait for a verified resume between STOPPED and RUNNING is the gate's (core/gate.ts). A
 * wait that runs out while the workflow goes on (an AI SDK agent) moves WAITING back to STOPPED.
 */
import type { RunPhase } from '../common/contracts';
import { TerminalState } from '../guard';

/** The terminal states a run waits in for a resume instead of ending. */
export const RESUMABLE: ReadonlySet<TerminalState> = new Set([
  TerminalState.STOPPED_LOOP_GUARD,
  TerminalState.NEEDS_HUMAN,
]);

/** True for a phase the run ends in. */
export const isTerminal = (phase: RunPhase): phase is TerminalState =>
  phase !== 'RUNNING' && phase !== 'STOPPED' && phase !== 'WAITING';

/** The phase after a move from `from` to `next`; throws for a move the diagram has not. */
export function nextPhase(from: RunPhase, next: RunPhase): RunPhase {
  const allowed =
    (next === 'STOPPED' && from === 'RUNNING') ||
    (next === 'WAITING' && from === 'STOPPED') ||
    (next === 'RUNNING' && from === 'WAITING') ||
    // The wait ran out but the workflow goes on, still stopped (an AI SDK agent's untilResumed).
    (next === 'STOPPED' && from === 'WAITING') ||
    (isTerminal(next) && !isTerminal(from));
  if (!allowed) throw new Error(`RunState: no transition from ${from} to ${next}`);
  return next;
}
