/**
 * What agentctl prints names what a person sees (issue 38 items 3/5): budget defaults per
 * kind of run, a refused call not numbered as the step before it, plain words beside the
 * guard's decision codes, an operator's stop reported as the operator's.
 */
import { cell, clip, traceLine } from '../../client/format';
import { formatReport, stoppedBy } from '../../client/commands/inspect';
import type { StopReport, TraceRecord } from '../../guard';
import { settleAdvice } from '../../storage/ledger';
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

  it('agentctl report prints the whole settle command of an unknown write (the prose around it is cut instead)', () => {
    const key = 'reminder:INV-100:acme-industries-north-america:2026-12-07:overdue-30-days';
    const unmet = `operation ${key}: the executor died after dispatch; ${settleAdvice(key)}`;
    const text = formatReport({
      terminal_state: 'NEEDS_HUMAN',
      guard_reason: 'outcome_unknown',
      blocked_call: null,
      unmet_precondition: unmet,
      resume_condition: 'the ledger record is settled',
      next_allowed_action: 'agentctl ledger resolve',
      completed: [],
      last_safe_checkpoint: null,
      steps: 3,
      last_progress_version: 1,
    } as unknown as StopReport);
    const line = text.split('\n').find((l) => l.startsWith('unmet'))!;
    const command = `agentctl ledger resolve ${key} --as succeeded --actor NAME --reason 'the evidence checked'`;
    expect(line).toContain(`"${command}"`);
    // The prose was cut instead, its lead-in to the command and the hint after it kept.
    expect(line).toMatch(/^unmet +operation reminder:INV.*….*settle it with "agentctl/);
    expect(line).toMatch(/" \(--as failed if it did not happen\)$/);
    expect(line.length).toBeLessThan('unmet  '.length + unmet.length);
    // A key with characters a shell reads is quoted in the command.
    expect(settleAdvice("sms:+2:lost? it's")).toContain(
      `agentctl ledger resolve 'sms:+2:lost? it'\\''s' --as`,
    );
  });

  it('a cell without a command is cut as before; a command outside quotes is kept up to its end', () => {
    expect(cell('x'.repeat(100), 10)).toBe(`${'x'.repeat(9)}…`);
    const text = `${'why '.repeat(40)}then run agentctl resume run-1 --reason checked; and more ${'words '.repeat(20)}`;
    const command = 'agentctl resume run-1 --reason checked';
    const cut = clip(text, 60);
    expect(cut).toContain(command);
    // The prose keeps 80 characters at least, whatever the column's width.
    expect(cut.length).toBeLessThanOrEqual(command.length + 80);
    expect(cut.length).toBeLessThan(text.length);
  });
});
