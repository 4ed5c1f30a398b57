/**
 * The sandbox-safe size functions (common/payload-limits.ts) and the checkpoint bounds
 * (core/checkpoint-bounds.ts) of issue 9: exact UTF-8 sizes, the PayloadTooLarge
 * failure and its detection, the reference threshold's env variable, and a checkpoint
 * whose trace carries 200 records of 3 KB args staying within its byte bound.
 */
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { payloadRefBytesFromEnv } from '../../storage/payloads';
import type { Checkpoint, RunResult } from '../../common/contracts';
import {
  DEFAULT_PAYLOAD_REF_BYTES,
  guardOutputSize,
  isPayloadRef,
  isPayloadTooLarge,
  jsonBytes,
  MAX_PAYLOAD_BYTES,
  PAYLOAD_TOO_LARGE,
  utf8Bytes,
  utf8Prefix,
} from '../../common/payload-limits';
import { GuardReason, liftRuleOf, resumeConditionOf, TerminalState, type TraceRecord } from '../../guard';
import {
  boundObservation,
  boundTrace,
  CHECKPOINT_ARGS_BYTES,
  CHECKPOINT_TRACE_BYTES,
  checkpointTooLarge,
  fitResult,
} from '../../core/checkpoint-bounds';

const SAMPLES = [
  '',
  'ascii',
  'é',
  'ü€',
  '😀 emoji',
  'a\ud800b',
  '\udc00',
  'x😀'.repeat(100),
  '中文字符'.repeat(50),
];

describe('utf8Bytes / utf8Prefix', () => {
  it('agree with Buffer.byteLength on every kind of character, lone surrogates included', () => {
    for (const s of SAMPLES) expect(utf8Bytes(s)).toBe(Buffer.byteLength(s, 'utf8'));
    expect(jsonBytes({ s: 'é' })).toBe(Buffer.byteLength('{"s":"é"}'));
    expect(jsonBytes(undefined)).toBe(0);
  });

  it('a prefix never exceeds its byte budget and never splits a character', () => {
    for (const s of SAMPLES) {
      for (const max of [0, 1, 2, 3, 5, 17, 100]) {
        const p = utf8Prefix(s, max);
        expect(s.startsWith(p)).toBe(true);
        expect(Buffer.byteLength(p, 'utf8')).toBeLessThanOrEqual(max);
        // Maximal: one more character would not fit (or there is none).
        if (p.length < s.length) {
          const c = s.codePointAt(p.length) as number;
          expect(Buffer.byteLength(p + String.fromCodePoint(c), 'utf8')).toBeGreaterThan(max);
        }
      }
    }
    expect(utf8Prefix('😀😀', 5)).toBe('😀');
  });
});

describe('guardOutputSize / isPayloadTooLarge', () => {
  it('passes an output that fits and throws a non-retryable PayloadTooLarge naming what and how big', () => {
    const out = { data: 'x'.repeat(100) };
    expect(guardOutputSize(out, 'the output of plan')).toBe(out);
    let thrown: unknown;
    try {
      guardOutputSize({ data: 'x'.repeat(MAX_PAYLOAD_BYTES) }, 'the output of plan');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ApplicationFailure);
    const f = thrown as ApplicationFailure;
    expect(f.type).toBe(PAYLOAD_TOO_LARGE);
    expect(f.nonRetryable).toBe(true);
    expect(f.message).toBe(
      `the output of plan is ${MAX_PAYLOAD_BYTES + 11} bytes of JSON, above the ${MAX_PAYLOAD_BYTES}-byte payload limit: it cannot be passed through Temporal history`,
    );
    expect(f.details).toEqual([
      { what: 'the output of plan', bytes: MAX_PAYLOAD_BYTES + 11, limit: MAX_PAYLOAD_BYTES },
    ]);
    expect(isPayloadTooLarge(f)).toBe(true);
  });

  it('recognises the failure inside an ActivityFailure, and nothing else', () => {
    const wrap = (cause: Error) =>
      new ActivityFailure('activity failed', 'runTool', '1', RetryState.NON_RETRYABLE_FAILURE, 'w', cause);
    expect(isPayloadTooLarge(wrap(ApplicationFailure.nonRetryable('big', PAYLOAD_TOO_LARGE)))).toBe(true);
    expect(isPayloadTooLarge(wrap(ApplicationFailure.nonRetryable('down', 'LedgerUnavailable')))).toBe(false);
    expect(isPayloadTooLarge(new Error(PAYLOAD_TOO_LARGE))).toBe(false);
    expect(isPayloadTooLarge(null)).toBe(false);
  });
});

describe('AGENT_PAYLOAD_REF_BYTES', () => {
  it('defaults to 64 KB and takes a whole number of bytes from 1024 to the payload limit', () => {
    expect(payloadRefBytesFromEnv({})).toBe(DEFAULT_PAYLOAD_REF_BYTES);
    expect(DEFAULT_PAYLOAD_REF_BYTES).toBe(65_536);
    expect(payloadRefBytesFromEnv({ AGENT_PAYLOAD_REF_BYTES: ' 2048 ' })).toBe(2048);
    for (const bad of ['1023', '64k', '-5', '1.5', String(MAX_PAYLOAD_BYTES + 1)])
      expect(() => payloadRefBytesFromEnv({ AGENT_PAYLOAD_REF_BYTES: bad })).toThrow(
        `AGENT_PAYLOAD_REF_BYTES must be a whole number of bytes from 1024 to ${MAX_PAYLOAD_BYTES}, got "${bad}"`,
      );
  });
});

describe('payload_too_large in the reason catalogue', () => {
  it('stops NEEDS_HUMAN and lifts on an operator resume', () => {
    expect(GuardReason.PAYLOAD_TOO_LARGE).toBe('payload_too_large');
    expect(liftRuleOf(GuardReason.PAYLOAD_TOO_LARGE)).toBe('operator');
    expect(resumeConditionOf(GuardReason.PAYLOAD_TOO_LARGE, TerminalState.NEEDS_HUMAN, 3)).toMatch(
      /^operator resume after the cause is fixed/,
    );
  });
});

const record = (i: number, args: unknown): TraceRecord => ({
  run_id: 'r',
  step: i,
  tool: 'write_record',
  fingerprint: `fp-${i}`,
  args,
  result_kind: null,
  error_code: null,
  progress_version: i,
  operation_key: `k-${i}`,
  phase: 'before',
  decision: 'execute',
  reason: null,
  at_ms: 1_700_000_000_000 + i,
});

describe('checkpoint bounds', () => {
  it("200 records of 3 KB notes: the checkpoint's trace stays within its byte bound, newest kept, args previewed", () => {
    const records = Array.from({ length: 200 }, (_, i) =>
      record(i, { id: `n${i}`, body: `${i}:`.padEnd(3_000, 'n') }),
    );
    expect(jsonBytes(records)).toBeGreaterThan(600_000);
    const kept = boundTrace(records);
    expect(jsonBytes(kept)).toBeLessThanOrEqual(CHECKPOINT_TRACE_BYTES);
    expect(kept.length).toBeGreaterThan(50);
    expect(kept[kept.length - 1]?.step).toBe(199);
    expect(kept.map((r) => r.step)).toEqual(
      Array.from({ length: kept.length }, (_, i) => 200 - kept.length + i),
    );
    for (const r of kept) {
      expect(jsonBytes(r.args)).toBeLessThanOrEqual(CHECKPOINT_ARGS_BYTES);
      expect(r.args).toMatchObject({ args_truncated: true, bytes: jsonBytes(records[r.step]?.args) });
    }
    expect((kept[0]?.args as { preview: string }).preview.startsWith(`{"id":"n${kept[0]?.step}"`)).toBe(true);
    // Small args travel as they are; the input records are not changed.
    const small = [record(0, { id: 'a' }), record(1, null)];
    expect(boundTrace(small)).toEqual(small);
    expect(records[0]?.args).toMatchObject({ body: expect.stringMatching(/^0:n+$/) });
  });

  it('an inline observation above 64 KB travels as the planner preview; a reference as it is', () => {
    const data = { text: 'z'.repeat(200_000) };
    const obs = { tool: 'big', kind: 'SUCCESS' as const, data };
    const b = boundObservation(obs);
    expect(b?.data).toEqual({
      data_truncated: true,
      bytes: jsonBytes(data),
      data_preview: JSON.stringify(data).slice(0, 20_000),
    });
    expect(obs.data).toBe(data);
    const ref = { $agentPayloadRef: 1, id: `sha256:${'a'.repeat(64)}`, bytes: 10, preview: '{}' };
    expect(isPayloadRef(ref)).toBe(true);
    const withRef = { tool: 'big', kind: 'SUCCESS' as const, data: ref };
    expect(boundObservation(withRef)).toBe(withRef);
    expect(boundObservation(null)).toBeNull();
  });

  const cp = (memory: unknown): Checkpoint =>
    ({
      v: 1,
      guard: {},
      plannerMemory: memory,
      observation: null,
      proposals: 0,
      executed: 0,
      cached: 0,
      decisions: [],
      trace: [],
      traceTotal: 0,
      seenRequestIds: [],
      stop: null,
    }) as unknown as Checkpoint;

  it('checkpointTooLarge names the sizes when the checkpoint and the rest of the input exceed the limit', () => {
    expect(checkpointTooLarge(cp({ m: 'small' }), { goal: 'g' })).toBeNull();
    const why = checkpointTooLarge(cp({ m: 'm'.repeat(1_000_000) }), { script: 'x'.repeat(600_000) });
    expect(why).toMatch(
      /^the checkpoint is \d+ bytes of JSON \(plannerMemory 1000008, observation 4, trace 2, decisions 2, guard 2\) and the rest of the input 600013: above the 1500000-byte payload limit$/,
    );
  });

  it('fitResult leaves a result that fits alone and sheds decisions, then memory, then the checkpoint', () => {
    const result = (memory: unknown, decisions = 0): RunResult =>
      ({
        workflow_id: 'w',
        terminal_state: TerminalState.NEEDS_HUMAN,
        reason: 'payload_too_large',
        executed: 0,
        cached: 0,
        stopped_at: null,
        decisions: Array.from({ length: decisions }, (_, i) => ({
          index: i,
          tool: 'search',
          decision: 'execute',
        })),
        report: null,
        summary: null,
        checkpoint: cp(memory),
      }) as unknown as RunResult;
    const ok = result({ m: 1 });
    expect(fitResult(ok)).toEqual({ result: ok, dropped: [] });
    const heavy = fitResult(result({ m: 'm'.repeat(1_600_000) }, 5000));
    expect(heavy.dropped).toEqual([
      'decisions before the newest 1000',
      "the checkpoint's planner memory and observation",
    ]);
    expect(heavy.result.decisions).toHaveLength(1000);
    expect(heavy.result.checkpoint?.plannerMemory).toBeNull();
    expect(jsonBytes(heavy.result)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
    const small = fitResult(result({ m: 1 }), 100);
    expect(small.result.checkpoint).toBeNull();
  });
});
