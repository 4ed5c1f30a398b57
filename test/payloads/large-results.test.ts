/**
 * Issue 9, "no payload can wedge a run", end to end on the real dev server with SQLite:
 *
 * - a tool returning 300 KB, a write returning 300 KB (then answered from the ledger) and
 *   a terminal tool returning 300 KB: the run COMPLETES with its summary, no history event
 *   is anywhere near the data's size (the workflow carries references), the payload store
 *   holds the rows, and the plan activity receives the reference with its preview (which
 *   resolves to the data the model's 20,000-character preview is cut from);
 * - a tool returning 3 MB: the run COMPLETES with the data by reference; without a
 *   payload store it stops NEEDS_HUMAN payload_too_large with its checkpoint, never FAILED;
 * - a run of 3 KB notes that continues as new: each checkpoint's trace stays within its
 *   byte bound while the live trace keeps the full args;
 * - a checkpoint that cannot fit the continue-as-new input stops payload_too_large instead.
 */
import { join } from 'node:path';
import { RowCodec } from '../../storage/row-codec';
import { defaultPayloadConverter, type DataConverter, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { PayloadStore, resolvePayloadRefs } from '../../storage/payloads';
import { observationContent } from '../../planners/llm-common';
import { defineTool, type AnyTool } from '../../tools/define-tool';
import type { Tx } from '../../tools/tx';
import {
  resumeUpdate,
  statusQuery,
  traceQuery,
  type Checkpoint,
  type RunResult,
} from '../../common/contracts';
import type { Observation } from '../../common/planner';
import { isPayloadRef, jsonBytes, MAX_PAYLOAD_BYTES, type PayloadRef } from '../../common/payload-limits';
import { CHECKPOINT_ARGS_BYTES, CHECKPOINT_TRACE_BYTES } from '../../core/checkpoint-bounds';
import { startHarness, type Harness } from '../helpers/run-harness';
import { fixture, live, waitFor } from '../helpers/run-inputs';
import { createTestDb, type TestDb } from '../ledger/helpers/backends';
import { runResult } from '../helpers/run-result';

jest.setTimeout(120_000);

const count = (tx: Tx, runId: string, tool: string) =>
  tx.run(
    'INSERT INTO world_tool_calls (run_id, tool, count) VALUES (?, ?, 1) ON CONFLICT (run_id, tool) DO UPDATE SET count = world_tool_calls.count + 1',
    [runId, tool],
  );
/** These tools move no progress version: the guard must not stop the runs for that. */
const GUARD = { noProgressLimit: 100, maxSteps: 200 };
const text = (bytes: number, tag: string) => `${tag}:`.padEnd(bytes, 'x');

/** How large `sized_read`'s result is: a backend setting an operator can change. */
let sizedBytes = 3_000_000;

/** Tools whose results are as large as asked. */
const bigTools: AnyTool[] = [
  defineTool({
    name: 'sized_read',
    description: 'Read a page as large as the backend is configured to answer.',
    effect: 'read',
    schema: z.object({ page: z.number().int() }).strict(),
    async execute(_args, ctx) {
      await count(ctx.tx, ctx.runId, 'sized_read');
      return { data: { text: text(sizedBytes, 'page') } };
    },
  }),
  defineTool({
    name: 'big_read',
    description: 'Read a large document.',
    effect: 'read',
    schema: z.object({ bytes: z.number().int().positive(), tag: z.string() }).strict(),
    async execute(args, ctx) {
      await count(ctx.tx, ctx.runId, 'big_read');
      return { data: { text: text(args.bytes, args.tag) } };
    },
  }),
  defineTool({
    name: 'big_write',
    description: 'Write, answering with a large receipt.',
    effect: 'write',
    schema: z.object({ id: z.string(), bytes: z.number().int().positive() }).strict(),
    operationKey: (a) => `big:${a.id}`,
    async execute(args, ctx) {
      await count(ctx.tx, ctx.runId, 'big_write');
      return { data: { receipt: text(args.bytes, args.id) } };
    },
  }),
  defineTool({
    name: 'big_finish',
    description: 'Finish with a summary and a large report.',
    effect: 'read',
    schema: z.object({ summary: z.string(), bytes: z.number().int().positive() }).strict(),
    async execute(args, ctx) {
      await count(ctx.tx, ctx.runId, 'big_finish');
      return { data: { summary: args.summary, report: text(args.bytes, 'report') }, terminal: true };
    },
  }),
];

/** Every event of a run's history (one execution), and the largest event's encoded size. */
async function historyOf(h: Harness, workflowId: string, runId?: string) {
  const history = await h.env.client.workflow.getHandle(workflowId, runId).fetchHistory();
  const events = history.events ?? [];
  const sizes = events.map((e) => temporal.api.history.v1.HistoryEvent.encode(e).finish().length);
  return { events, maxEventBytes: Math.max(...sizes), totalBytes: sizes.reduce((a, b) => a + b, 0) };
}

/** Decodes payloads from history with the harness's codec (the test's random AGENT_CODEC_KEYS). */
async function decode(dc: DataConverter, payloads: temporal.api.common.v1.IPayload[] | null | undefined) {
  let ps = payloads ?? [];
  const codecs = [...((dc.payloadCodecs ?? []) as PayloadCodec[])].reverse();
  for (const c of codecs) ps = await c.decode(ps);
  return ps.map((p) => defaultPayloadConverter.fromPayload(p));
}

/** The observations the plan activity was given, in order. */
async function planObservations(h: Harness, workflowId: string): Promise<(Observation | null)[]> {
  const { events } = await historyOf(h, workflowId);
  const out: (Observation | null)[] = [];
  for (const e of events) {
    const a = e.activityTaskScheduledEventAttributes;
    if (a?.activityType?.name !== 'plan') continue;
    const [input] = (await decode(h.dataConverter, a.input?.payloads)) as [
      { observation: Observation | null },
    ];
    out.push(input.observation);
  }
  return out;
}

describe('large payloads (issue 9)', () => {
  let h: Harness;
  let store: PayloadStore;
  beforeAll(async () => {
    h = await startHarness({ tools: bigTools });
    // The worker seals payload rows with its codec (storage/row-codec.ts): open them with the same.
    store = PayloadStore.over(h.deps.ledger, new RowCodec(h.dataConverter.payloadCodecs ?? []));
  });
  afterAll(async () => {
    await h?.close();
  });

  it('300 KB results: the run COMPLETES, history carries references only, the store has the rows, the planner gets the preview', async () => {
    const run = await h.start(
      live(
        [
          { tool: 'big_read', args: { bytes: 300_000, tag: 'doc' } },
          { tool: 'big_write', args: { id: 'w1', bytes: 300_000 } },
          // The same write again: answered from the ledger (nothing runs), still by reference.
          { tool: 'big_write', args: { id: 'w1', bytes: 300_000 } },
          { tool: 'big_finish', args: { summary: 'all three stored', bytes: 300_000 } },
        ],
        // The plan's inputs are read back from history below: a scheduled plan activity keeps
        // them there (a local one, the default since issue 19, records only its result).
        { guard: GUARD, scriptedPlan: 'activity' },
      ),
    );
    const result = await runResult(run);
    expect(result).toMatchObject({
      terminal_state: 'COMPLETED',
      summary: 'all three stored',
      executed: 3,
      cached: 1,
    });
    expect(await h.counters(run.workflowId)).toEqual({ big_read: 1, big_write: 1, big_finish: 1 });

    const { maxEventBytes, totalBytes } = await historyOf(h, run.workflowId);
    // Without references each of four events would carry ≥ 300 KB.
    expect(maxEventBytes).toBeLessThan(64 * 1024 + 8 * 1024);
    expect(totalBytes).toBeLessThan(300_000);

    // Three distinct values stored (the cached write's result is the same row).
    const stats = await store.stats(run.workflowId);
    expect(stats.rows).toBe(3);
    expect(stats.bytes).toBeGreaterThan(900_000);

    // The planner's observations: references with a preview; resolved, the model's view
    // is the usual 20,000-character data_preview of the full data.
    const observations = await planObservations(h, run.workflowId);
    const [afterRead, afterWrite, afterCached] = observations.slice(1, 4);
    for (const o of [afterRead, afterWrite, afterCached]) {
      expect(o?.kind).toBe('SUCCESS');
      expect(isPayloadRef(o?.data)).toBe(true);
      expect(jsonBytes(o)).toBeLessThan(2_000);
    }
    expect(afterCached?.cached).toBe(true);
    const ref = afterRead?.data as PayloadRef;
    expect(ref.preview.startsWith('{"text":"doc:xxxx')).toBe(true);
    const resolved = await resolvePayloadRefs(store, run.workflowId, afterRead as Observation);
    expect(resolved.data).toEqual({ text: text(300_000, 'doc') });
    const seen = JSON.parse(observationContent(resolved)) as {
      data_truncated?: boolean;
      data_preview?: string;
    };
    expect(seen.data_truncated).toBe(true);
    expect(seen.data_preview).toBe(JSON.stringify({ text: text(300_000, 'doc') }).slice(0, 20_000));
    expect(await resolvePayloadRefs(store, run.workflowId, afterWrite as Observation)).toMatchObject({
      data: { receipt: text(300_000, 'w1') },
    });
  });

  it('a 3 MB result: the run COMPLETES with the data by reference; the tool ran once', async () => {
    const run = await h.start(
      live([
        { tool: 'big_read', args: { bytes: 3_000_000, tag: 'huge' } },
        { tool: 'complete_task', args: { summary: 'read it' } },
      ]),
    );
    expect(await runResult(run)).toMatchObject({ terminal_state: 'COMPLETED', summary: 'read it' });
    expect(await h.counters(run.workflowId)).toEqual({ big_read: 1, complete_task: 1 });
    const { maxEventBytes } = await historyOf(h, run.workflowId);
    expect(maxEventBytes).toBeLessThan(64 * 1024);
    const stats = await store.stats(run.workflowId);
    expect(stats).toEqual({ rows: 1, bytes: jsonBytes({ text: text(3_000_000, 'huge') }) });
  });

  it('a run of 3 KB notes that continues as new: every checkpoint trace within its bound, the live trace intact', async () => {
    const notes = Array.from({ length: 30 }, (_, i) => ({
      tool: 'write_record',
      args: { id: `note-${i}`, body: `note ${i} `.padEnd(3_000, 'n') },
    }));
    const run = await h.start(
      live([...notes, { tool: 'complete_task', args: { summary: 'noted' } }], {
        maxHistoryEvents: 60,
        guard: GUARD,
      }),
    );
    expect(await runResult(run)).toMatchObject({ terminal_state: 'COMPLETED', summary: 'noted' });
    expect(await h.counters(run.workflowId)).toEqual({ write_record: 30, complete_task: 1 });

    // Walk the chain from the first execution: each continue-as-new input's checkpoint.
    const checkpoints: Checkpoint[] = [];
    let runId: string | undefined = run.handle.firstExecutionRunId;
    while (runId) {
      const { events } = await historyOf(h, run.workflowId, runId);
      const can = events.find(
        (e) => e.workflowExecutionContinuedAsNewEventAttributes,
      )?.workflowExecutionContinuedAsNewEventAttributes;
      if (!can) break;
      const [input] = (await decode(h.dataConverter, can.input?.payloads)) as [{ checkpoint: Checkpoint }];
      checkpoints.push(input.checkpoint);
      runId = can.newExecutionRunId ?? undefined;
    }
    expect(checkpoints.length).toBeGreaterThanOrEqual(2);
    const last = checkpoints[checkpoints.length - 1] as Checkpoint;
    // Unbounded, the newest 200 records would carry every 3 KB body written so far.
    expect(last.traceTotal).toBeGreaterThan(20);
    for (const cp of checkpoints) {
      expect(jsonBytes(cp.trace)).toBeLessThanOrEqual(CHECKPOINT_TRACE_BYTES);
      for (const r of cp.trace) expect(jsonBytes(r.args)).toBeLessThanOrEqual(CHECKPOINT_ARGS_BYTES);
    }
    const previewed = last.trace.filter((r) => (r.args as { args_truncated?: boolean }).args_truncated);
    expect(previewed.length).toBeGreaterThan(0);
    // The first execution's live trace (queried on that run) kept the full args the
    // checkpoint it handed on carried only as previews.
    const first = h.env.client.workflow.getHandle(run.workflowId, run.handle.firstExecutionRunId);
    const page = await first.query(traceQuery, { limit: 1000 });
    const bodies = page.records
      .filter((r) => r.tool === 'write_record' && r.phase === 'before')
      .map((r) => (r.args as { body?: string }).body);
    expect(bodies.length).toBeGreaterThan(0);
    for (const b of bodies) expect(b).toHaveLength(3_000);
    const cp0 = checkpoints[0] as Checkpoint;
    expect(
      cp0.trace
        .filter((r) => r.tool === 'write_record')
        .every((r) => jsonBytes(r.args) <= CHECKPOINT_ARGS_BYTES),
    ).toBe(true);
  });
});

describe('large payloads without a payload store', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ tools: bigTools, deps: () => ({ payloads: null }) });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a 3 MB result stops the run NEEDS_HUMAN payload_too_large with its checkpoint; it does not FAIL', async () => {
    const run = await h.start(
      live([
        { tool: 'big_read', args: { bytes: 3_000_000, tag: 'huge' } },
        { tool: 'complete_task', args: { summary: 'never' } },
      ]),
    );
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({
      terminal_state: 'NEEDS_HUMAN',
      reason: 'payload_too_large',
      executed: 1,
      report: { guard_reason: 'payload_too_large', blocked_call: { tool: 'big_read' } },
    });
    expect(result.report?.unmet_precondition).toMatch(
      new RegExp(
        `^tool big_read: the result of tool big_read \\(not stored by reference: no payload store on this worker\\) is 3000011 bytes of JSON, above the ${MAX_PAYLOAD_BYTES}-byte payload limit`,
      ),
    );
    expect(result.checkpoint?.stop).toMatchObject({
      reason: 'payload_too_large',
      terminalState: 'NEEDS_HUMAN',
    });
    // It ran exactly once: the failure is not retried (a retry would return the same).
    expect(await h.counters(run.workflowId)).toEqual({ big_read: 1 });
    // Closed as a run that did not complete (its result in the AgentRunNotCompleted failure
    // runResult read above), not as a workflow whose task failed.
    const desc = await run.handle.describe();
    expect(desc.status.name).toBe('FAILED');
    const { maxEventBytes } = await historyOf(h, run.workflowId);
    expect(maxEventBytes).toBeLessThan(64 * 1024);
  });

  it('payload_too_large lifts on an operator resume: once the cause is fixed the call runs again and the run COMPLETES', async () => {
    sizedBytes = 3_000_000;
    const run = await h.start(
      live(
        [
          { tool: 'sized_read', args: { page: 1 } },
          { tool: 'complete_task', args: { summary: 'page read' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
      30_000,
    );
    expect(await run.handle.query(statusQuery)).toMatchObject({
      terminalState: 'NEEDS_HUMAN',
      guardReason: 'payload_too_large',
    });
    // The operator has the backend answer smaller pages, then resumes.
    sizedBytes = 2_000;
    const answer = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'page size lowered', requestId: 'ptl-r1' }],
    });
    expect(answer.accepted).toBe(true);
    expect(await runResult(run)).toMatchObject({ terminal_state: 'COMPLETED', summary: 'page read' });
    // Asked again from before the refused call: it ran once per attempt.
    expect(await h.counters(run.workflowId)).toEqual({ sized_read: 2, complete_task: 1 });
  });

  it('a checkpoint that cannot fit the continue-as-new input stops payload_too_large instead of continuing', async () => {
    // A fixture script whose one result is 1.49 MB: the run's own input is that large, so
    // input + checkpoint cannot travel into a new run. `maxHistoryEvents: 12`: the history before
    // the first call (the start, two workflow tasks, the patch marker and its search attribute
    // upsert, the world version's activity: 12 events) is not yet long, the history after it is.
    const data = { text: text(1_490_000, 'fixture') };
    const run = await h.start(
      fixture(
        [
          { tool: 'search', args: { query: 'big' }, result: { kind: 'SUCCESS', data } },
          { tool: 'search', args: { query: 'next' }, result: { kind: 'SUCCESS', data: { ok: true } } },
          { tool: 'complete_task', args: { summary: 'x' }, result: { kind: 'SUCCESS', terminal: true } },
        ],
        { maxHistoryEvents: 12 },
      ),
    );
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'payload_too_large', executed: 1 });
    expect(result.report?.unmet_precondition).toMatch(
      /^continue-as-new refused: the checkpoint is \d+ bytes of JSON \(.*\) and the rest of the input \d+: above the 1500000-byte payload limit$/,
    );
    expect(result.checkpoint?.stop?.reason).toBe('payload_too_large');
    // Still its first execution: it never continued as new; it closed as a run that did not
    // complete (FAILED, its result in the failure runResult read), its checkpoint kept.
    const desc = await run.handle.describe();
    expect(desc.runId).toBe(run.handle.firstExecutionRunId);
    expect(desc.status.name).toBe('FAILED');
  });
});

describe('large payloads on a PostgreSQL ledger', () => {
  let h: Harness;
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb('postgres');
    h = await startHarness({
      tools: bigTools,
      dbUrl: db.url,
      worldUrl: `sqlite:${join(db.dir, 'world.db')}`,
    });
  });
  afterAll(async () => {
    await h?.close();
    await db?.cleanup();
  });

  it('a 300 KB result: the run COMPLETES by reference, the row is in PostgreSQL', async () => {
    const run = await h.start(
      live([
        { tool: 'big_read', args: { bytes: 300_000, tag: 'pg' } },
        { tool: 'complete_task', args: { summary: 'pg done' } },
      ]),
    );
    expect(await runResult(run)).toMatchObject({ terminal_state: 'COMPLETED', summary: 'pg done' });
    expect(await h.counters(run.workflowId)).toEqual({ big_read: 1, complete_task: 1 });
    const rows = await db.exec('SELECT bytes FROM agent_payloads WHERE run_id = ?', [run.workflowId]);
    expect(rows.map((r) => Number(r.bytes))).toEqual([jsonBytes({ text: text(300_000, 'pg') })]);
    const { maxEventBytes } = await historyOf(h, run.workflowId);
    expect(maxEventBytes).toBeLessThan(64 * 1024);
  });
});
