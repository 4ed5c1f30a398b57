/**
 * What agentctl prints names what a person sees (issue 38 items 3/5): budget defaults per
 * kind of run, a refused call not numbered as the step before it, plain words beside the
 * guard's decision codes, an operator's stop reported as the operator's.
 */
import { traceLine } from '../../client/format';
import { stoppedBy } from '../../client/commands/inspect';
import type { TraceRecord } from '../../guard';
import { agentctl } from './cli-helpers';

const record = (o: Partial<TraceRecord>): TraceRecord => ({
  run_id: 'r',
  step: 2,
  tool: 'search',
  fingerprint: 'search:1',
  args: {},
  result_kind: null,
  error_code: null,
  progress_version: 0,
  operation_key: null,
  phase: 'before',
  decision: 'execute',
  reason: null,
  at_ms: 0,
  ...o,
});

describe("agentctl's words", () => {
  it('start --help gives each budget default for a scripted run and for an LLM run (the llm profile)', async () => {
    const r = await agentctl(['start', '--help'], {});
    expect(r.code).toBe(0);
    const help = r.stdout.replace(/\s+/g, ' ');
    expect(help).toMatch(
      /--max-tokens <n> token budget \(default unlimited for a scripted run, 2000000 for an LLM run/,
    );
    expect(help).toMatch(
      /--max-cost-usd <usd> cost budget in USD \(default unlimited for a scripted run, \$10 for an LLM run/,
    );
    expect(help).toMatch(/--max-steps <n> step budget \(default 20 for a scripted run, 50 for an LLM run/);
  });

  it('a call refused before it ran is "refused", not the step before it; wait_bounded is explained', () => {
    expect(traceLine(record({ decision: 'execute' }))).toBe('step 2 before search execute');
    expect(traceLine(record({ decision: 'stop', reason: 'same_call_repeat' }))).toBe(
      'refused before search stop (same_call_repeat) — it did not run',
    );
    expect(traceLine(record({ decision: 'steer', reason: 'same_call_repeat' }))).toMatch(
      /^refused .*— it did not run; the model was told why$/,
    );
    expect(
      traceLine(
        record({
          phase: 'after',
          decision: 'wait_bounded',
          result_kind: 'PENDING',
          error_code: 'job_running',
        }),
      ),
    ).toMatch(
      /^step 2 after {2}search wait_bounded → PENDING:job_running — not done yet: the run sleeps, then asks again/,
    );
  });

  it("an operator's stop is the operator's, not the loop guard's", () => {
    expect(stoppedBy('STOPPED_LOOP_GUARD', 'operator_stop')).toMatch(/^an operator .*not the loop guard$/);
    expect(stoppedBy('STOPPED_LOOP_GUARD', 'same_call_repeat')).toBe('the loop guard (same_call_repeat)');
    expect(stoppedBy('NEEDS_HUMAN', 'permission_denied')).toMatch(/needs a person \(permission_denied\)/);
    expect(stoppedBy('COMPLETED', null)).toBeNull();
  });
});
