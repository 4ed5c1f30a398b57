/**
 * Say how it ended (issue 30): the console's card of a waiting run says, in the words agentctl
 * uses (common/ending.ts), that the task was not done and why, and shows the model's final
 * message (redacted) when it gave one.
 */
import type { Checkpoint } from '../../common/contracts';
import { waitingRunOf } from '../../client/console/inbox';
import { howItEnded } from '../../client/runs';

function stoppedCheckpoint(reason: string, finalMessage?: string): Checkpoint {
  return {
    v: 1,
    guard: { config: { maxSteps: 10 } },
    decisions: [],
    trace: [],
    traceTotal: 0,
    stop: {
      terminalState: reason === 'model_stopped' ? 'PARTIAL' : 'STOPPED_LOOP_GUARD',
      reason,
      report: {
        terminal_state: 'STOPPED_LOOP_GUARD',
        guard_reason: reason,
        last_safe_checkpoint: 'stop-1',
        blocked_call: null,
        ...(finalMessage !== undefined ? { final_message: finalMessage } : {}),
      },
    },
  } as unknown as Checkpoint;
}

describe('the console says how a waiting run ended', () => {
  it('a guard stop: not done, the reason named, the final word shown', () => {
    const run = waitingRunOf(
      'r1',
      stoppedCheckpoint('step_budget', 'I searched twice; the docs are left.'),
      null,
      'u',
    );
    expect(run?.ended).toBe('stopped before the task was done (step_budget)');
    expect(run?.ended).toBe(howItEnded('STOPPED_LOOP_GUARD', 'step_budget').ended);
    expect(run?.finalMessage).toBe('I searched twice; the docs are left.');
  });

  it('the model stopped talking: said so; no final word is null', () => {
    const run = waitingRunOf('r2', stoppedCheckpoint('model_stopped', 'bye'), null, 'u');
    expect(run?.ended).toContain('the model stopped talking without finishing the task');
    expect(run?.finalMessage).toBe('bye');
    expect(waitingRunOf('r3', stoppedCheckpoint('no_progress'), null, 'u')?.finalMessage).toBeNull();
  });

  it('a secret in the final message is redacted', () => {
    const run = waitingRunOf(
      'r4',
      stoppedCheckpoint('step_budget', 'used key sk-abcdefghijklmnopqrstuvwxyz123456'),
      null,
      'u',
    );
    expect(run?.finalMessage).not.toContain('sk-abcdefghijklmnopqrstuvwxyz123456');
  });
});
