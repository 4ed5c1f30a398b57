/**
 * A checkpoint of constant size (issue 19, docs/spec.md §7.10), on a real dev server with real
 * SQLite and PostgreSQL ledgers:
 *  - a live run of 120 writes over several continue-as-new keeps only its newest 100 keys in
 *    its checkpoint; a forgotten key proposed again is answered from the ledger (the tool's
 *    counter does not move) and one with other args stops idempotency_conflict; the StopReport
 *    lists the newest 100 keys and `completed_total`;
 *  - a checkpoint written before the window (every key in `completed`, no `ledgerCompleted`)
 *    given to a new run: it continues, its old keys answered without running the tool;
 *  - the ledger unavailable while the guard learns a forgotten key: the plan stops
 *    infrastructure_fault NEEDS_HUMAN with its checkpoint, the write never runs again, and
 *    after the database is back a resume completes with the key answered from the ledger.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { checkpointKeyFromEnv, createCheckpointActivities } from '../../activities/checkpoint-seal';
import {
  checkpointQuery,
  resumeUpdate,
  statusQuery,
  type Checkpoint,
  type RunInput,
} from '../../common/contracts';
import { jsonBytes } from '../../common/payload-limits';
import { DatabaseOutage } from '../../scripts/outage/database';
import { TEST_PG_URL } from '../ledger/helpers/backends';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor, type ScriptCall } from '../helpers/run-inputs';
import { agentctl, cliEnv } from '../client/cli-helpers';
import { runResult } from '../helpers/run-result';

/** `times` distinct writes `<tag>-{i}` under keys `<tag>-{i}`, in the compact script form. */
const writes = (tag: string, times: number) =>
  ({
    repeat: {
      times,
      call: { tool: 'write_record', args: { id: `${tag}-{i}`, body: 'v' }, operationKey: `${tag}-{i}` },
    },
  }) as unknown as ScriptCall;
const writeOf = (tag: string, i: number, body = 'v'): ScriptCall => ({
  tool: 'write_record',
  args: { id: `${tag}-${i}`, body },
  operationKey: `${tag}-${i}`,
});
const done: ScriptCall = { tool: 'complete_task', args: { summary: 'done' } };
const roomy = { noProgressLimit: 1000, maxSteps: 1000 };

describe('a lean checkpoint (SQLite ledger)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('keeps the newest 100 keys across continue-as-new; a forgotten key comes back from the ledger', async () => {
    const input = live([writes('lean', 120), writeOf('lean', 0), writeOf('lean', 1, 'other')], {
      maxHistoryEvents: 300,
      guard: roomy,
    });
    const run = await h.start(input);
    const r = await runResult(run);

    expect(r.terminal_state).toBe('NEEDS_HUMAN');
    expect(r.reason).toBe('idempotency_conflict');
    expect(r.executed).toBe(120);
    expect(r.cached).toBe(1);
    expect(r.decisions.slice(-2).map((d) => d.decision)).toEqual(['return_cached_success', 'stop']);
    // The tool ran once per key: the re-proposed key was answered from the ledger.
    expect(await h.worldCounters(run.workflowId)).toEqual({ write_record: 120 });
    expect(r.report?.completed).toHaveLength(100);
    expect(r.report?.completed).toContain('lean-119');
    expect(r.report?.completed_total).toBe(120);

    const cp = r.checkpoint!;
    expect(cp.guard.completed).toEqual([]);
    expect(cp.guard.ledgerCompleted?.recent).toHaveLength(100);
    expect(cp.guard.ledgerCompleted?.total).toBe(120);
    expect(cp.decisions.length).toBeLessThanOrEqual(100);
    expect(jsonBytes(cp.trace)).toBeLessThanOrEqual(16 * 1024);
    expect(jsonBytes(cp)).toBeLessThanOrEqual(64 * 1024);

    // It really continued as new, several times.
    const latest = await h.env.client.workflow.getHandle(run.workflowId).describe();
    expect(latest.runId).not.toBe(run.handle.firstExecutionRunId);

    // The trace records that left the checkpoint are in the worker's database, each once, in
    // order from the first; `agentctl trace --stored` pages them.
    const cli = await agentctl(['trace', run.workflowId, '--stored', '--limit', '1000', '--json'], cliEnv(h));
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const stored = JSON.parse(cli.stdout) as { total: number; records: { seq: number; decision: string }[] };
    expect(stored.total).toBeGreaterThan(100);
    expect(stored.records.map((x) => x.seq)).toEqual(stored.records.map((_, i) => i));
    expect(stored.records[0]).toMatchObject({
      seq: 0,
      phase: 'before',
      tool: 'write_record',
      decision: 'execute',
    });
    const none = await agentctl(['trace', 'no-such-run', '--stored'], cliEnv(h));
    expect(none.code).toBe(3);
    expect(none.stderr).toMatch(/no paged-out trace stored for no-such-run/);
  }, 180_000);

  it('continues from a checkpoint written before the window, its old keys still answered', async () => {
    // A real run's keys in the ledger…
    const first = await h.start(live([writes('old', 30)], { guard: roomy }));
    const a = await runResult(first);
    expect(a.terminal_state).toBe('PARTIAL');
    expect(await h.worldCounters(first.workflowId)).toEqual({ write_record: 30 });
    // …and its checkpoint in the old format: every key in `completed` (plus 400 more), no window.
    const { ledgerCompleted, ...guard } = a.checkpoint!.guard;
    const legacy = Array.from({ length: 400 }, (_, n) => [`legacy-${n}`, null] as const);
    const { seal: _seal, ...rest } = a.checkpoint!;
    const old: Checkpoint = {
      ...rest,
      // Taken while running (a continue-as-new's): no stop in force.
      guard: { ...guard, completed: [...legacy, ...(ledgerCompleted?.recent ?? [])], stop: null },
      plannerMemory: { next: 0 },
      stop: null,
    };
    const sealed = await createCheckpointActivities(checkpointKeyFromEnv()).sealCheckpoint(old);

    const input: RunInput = {
      ...live([writeOf('old', 0), writeOf('old', 29), writes('new', 5), done], {
        guard: roomy,
        maxHistoryEvents: 30,
      }),
      checkpoint: sealed,
    };
    const run = await h.start(input);
    const r = await runResult(run);
    expect(r.terminal_state).toBe('COMPLETED');
    expect(r.decisions.slice(-8).map((d) => d.decision)).toEqual([
      'return_cached_success',
      'return_cached_success',
      'execute',
      'execute',
      'execute',
      'execute',
      'execute',
      'execute',
    ]);
    // The old keys did not run again: the first run's counter stays, the new run wrote 5.
    expect(await h.worldCounters(first.workflowId)).toEqual({ write_record: 30 });
    expect(await h.worldCounters(run.workflowId)).toEqual({ write_record: 5, complete_task: 1 });
    // The old keys stay exact across this run's continue-as-new; new ones join the window.
    const latest = await h.env.client.workflow.getHandle(run.workflowId).describe();
    expect(latest.runId).not.toBe(run.handle.firstExecutionRunId);
  }, 180_000);
});

describe('a lean checkpoint with the ledger unavailable (PostgreSQL outage)', () => {
  let outage: DatabaseOutage;
  let h: Harness;
  let plans = 0;
  // The outage begins when the plan activity that re-proposes out-0 (forgotten by then) starts.
  const factory: ActivityInterceptorsFactory = () => ({
    inbound: {
      async execute(input, next) {
        const script = (input.args[0] as { planner?: { script?: { calls?: ScriptCall[] } } })?.planner
          ?.script;
        const call = script?.calls?.[0];
        if (Context.current().info.activityType === 'plan' && call?.operationKey === 'out-0') {
          plans += 1;
          if (plans >= 2 && outage.startedAt === null) await outage.begin();
        }
        return next(input);
      },
    },
  });

  beforeAll(async () => {
    outage = await DatabaseOutage.create(TEST_PG_URL);
    const worldFile = join(mkdtempSync(join(tmpdir(), 'alg-lean-')), 'world.db');
    h = await startHarness({
      dbUrl: outage.url,
      worldUrl: `sqlite:${worldFile}`,
      worker: () => ({ interceptors: { activity: [factory] } }),
    });
  });
  afterAll(async () => {
    await h?.close();
    await outage?.drop();
  });

  it('stops infrastructure_fault NEEDS_HUMAN, never a wrong decision; a resume completes', async () => {
    const input = live([writes('out', 103), writeOf('out', 0), done], {
      guard: roomy,
      maxHistoryEvents: 400,
      resumeWindowMs: 120_000,
      // Every turn a `plan` of its own, so the outage begins as out-0 is planned again (the
      // prefetch path's ledger failure: test/workflows/local-plan.test.ts).
      scriptedPlan: 'local',
    });
    const run = await h.start(input);
    const st = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
      120_000,
    );
    expect(outage.down).toBe(true);
    expect(st).toMatchObject({ terminalState: 'NEEDS_HUMAN', guardReason: 'infrastructure_fault' });
    expect((await run.handle.describe()).status.name).toBe('RUNNING');
    const cp = await run.handle.query(checkpointQuery);
    expect(cp.stop?.reason).toBe('infrastructure_fault');
    expect(cp.guard.ledgerCompleted?.recent.map(([k]) => k)).not.toContain('out-0');
    // The forgotten key's write did not run again.
    expect(await h.worldCounters(run.workflowId)).toEqual({ write_record: 103 });

    await outage.end();
    const answer = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'ledger database back', requestId: 'lean-r1' }],
    });
    expect(answer.accepted).toBe(true);
    const r = await runResult(run);
    expect(r.terminal_state).toBe('COMPLETED');
    expect(r.cached).toBe(1);
    expect(await h.worldCounters(run.workflowId)).toEqual({ write_record: 103, complete_task: 1 });
  }, 240_000);
});
