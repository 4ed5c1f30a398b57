/**
 * The words of the history's marks (workflows/history-marks.ts): a refused call as its tool and
 * redacted, clipped args with the rule and what followed; an outcome that is not a plain success;
 * nothing for a SUCCESS that ran.
 */
import { callText, outcomeMark, refusalMark } from '../../workflows/history-marks';
import { GuardReason } from '../../guard';

const stop = (reason: string) =>
  ({ kind: 'stop', before: { decision: 'stop', reason } }) as unknown as Parameters<typeof refusalMark>[2];

describe('history marks', () => {
  it('a refused call: tool, args, rule, and that it did not run', () => {
    expect(refusalMark('search', { query: 'disk full' }, stop(GuardReason.SAME_CALL_REPEAT))).toBe(
      'refused search {"query":"disk full"} · same_call_repeat · not run, the run stops',
    );
  });

  it('a secret in the args is redacted, as in the trace', () => {
    const text = refusalMark(
      'pay',
      { card: 'x', apiKey: 'sk-live-abcdef0123456789' },
      stop('approval_required'),
    );
    expect(text).not.toContain('sk-live-abcdef0123456789');
    expect(text).toContain('pay {');
  });

  it('args too long for a summary are cut with a mark', () => {
    const text = callText('write', { body: 'x'.repeat(5_000) });
    expect(text.length).toBeLessThan(200);
    expect(text.endsWith('…')).toBe(true);
  });

  it('outcomes: a FATAL and a ledger answer are marked, a SUCCESS that ran is not', () => {
    expect(outcomeMark('deploy', { kind: 'FATAL', code: 'permission_denied', message: 'no' }, false)).toBe(
      'deploy → FATAL permission_denied',
    );
    expect(outcomeMark('pay', { kind: 'SUCCESS', data: {} }, true)).toBe(
      'pay answered from the ledger · already done, not run again',
    );
    expect(outcomeMark('search', { kind: 'SUCCESS', data: {} }, false)).toBeNull();
  });
});
