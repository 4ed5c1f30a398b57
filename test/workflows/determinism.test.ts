/**
 * Issue 3 item 11, part 8: determinism. Recorded histories of real runs (in
 * test/fixtures/histories/*.json) must replay against the current workflow code with
 * `Worker.runReplayHistories` — no server needed — and a tampered history must fail with
 * `DeterminismViolationError`. A change to agent-run.ts that would break running
 * workflows on deploy fails here.
 *
 * RE-RECORD (needs the dev server; do it only for an intentional change of workflow code
 * before the first release, or for a new scenario):
 *
 *   AGENT_CODEC=off RECORD_HISTORIES=1 npx jest test/workflows/determinism
 *
 * That runs the scenarios below on the shared dev server, writes one file per scenario
 * (`handle.fetchHistory()` as JSON), then replays them as usual. Commit the files.
 * `RECORD_HISTORIES=<name>,<name>` records only those scenarios.
 * `AGENT_CODEC=off`: the files hold plain payloads, which the replay below reads without a codec.
 *
 * WHICH CODE. The set is the v1 baseline (issue 37): every file was recorded on the workflow
 * code as it is before the first release, which has no `patched()` branch and no old path.
 * After the release a change of workflow code ships as docs/versioning.md says (a patch, or a
 * new pinned Worker Deployment version), and these files stay: a release that would break a
 * run recorded on v1 fails here. The tampered copies below are the negative control.
 *
 * FORMAT. `{ workflowId, history }` where `history` is the proto3 JSON form that
 * `temporal workflow show --output json` prints (the SDK's `historyToJSON`), read back
 * with `historyFromJSON`. (Those helpers need ONE protobufjs shared by @temporalio/common
 * and @temporalio/proto: package.json depends on protobufjs 8 directly so npm hoists one.)
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { ApprovalStore } from '../../storage/approvals';
import { reportQuery, resumeSignal, resumeUpdate, statusQuery, stopSignal } from '../../common/contracts';
import { fixture, live, search, waitFor, type ScriptCall } from '../helpers/run-inputs';
import { agentSinks } from '../../worker/create-worker';
import { startHarness, workflowBundle, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const DIR = resolve(__dirname, '../fixtures/histories');
const RECORD_ENV = process.env.RECORD_HISTORIES ?? '';
const RECORD = RECORD_ENV !== '';
/** The scenarios to record: all for `1`, else the names listed. */
const recording = (name: string): boolean => RECORD_ENV === '1' || RECORD_ENV.split(',').includes(name);

/**
 * `before`, then a deploy of `service` that stops PRECONDITION (not granted), the grant, a resume
 * (`requestId`), the deploy again and `complete_task`: the run ids of the recorded history.
 */
async function deployGrantedAfterStop(
  h: Harness,
  service: string,
  before: ScriptCall[],
  requestId: string,
): Promise<{ workflowId: string; runId: string }> {
  const deploy = { tool: 'deploy', args: { service, version: '1' } };
  const run = await h.start(
    live([...before, deploy, deploy, { tool: 'complete_task', args: { summary: 'deployed' } }], {
      resumeWindowMs: 60_000,
    }),
  );
  await waitFor(
    () => run.handle.query(statusQuery),
    (s) => s.phase === 'WAITING',
  );
  await h.deps.world.grant(`deploy:${service}`);
  await run.handle.executeUpdate(resumeUpdate, { args: [{ actor: 'a', reason: 'granted', requestId }] });
  await runResult(run);
  return { workflowId: run.workflowId, runId: run.handle.firstExecutionRunId };
}

/**
 * The next-to-last run of a chain of 30 writes (ids `<prefix>-<n>`): restored from a lean
 * checkpoint whose trace is full (16 KB), it pages its oldest records out (`saveTrace`) and
 * continues as new again.
 */
async function chainNextToLast(h: Harness, prefix: string): Promise<{ workflowId: string; runId: string }> {
  const write = (i: number) => ({ tool: 'write_record', args: { id: `${prefix}-${i}`, body: 'b' } });
  const calls = [
    ...Array.from({ length: 30 }, (_, i) => write(i)),
    write(0),
    { tool: 'complete_task', args: { summary: 'ok' } },
  ];
  const run = await h.start(
    live(calls, { maxHistoryEvents: 40, guard: { noProgressLimit: 50, maxSteps: 100 } }),
  );
  const r = await runResult(run);
  if (r.terminal_state !== 'COMPLETED' || r.cached !== 1) throw new Error(`unexpected ${JSON.stringify(r)}`);
  const chain: string[] = [];
  for (let id: string | undefined = run.handle.firstExecutionRunId; id;) {
    chain.push(id);
    const hist = await h.env.client.workflow.getHandle(run.workflowId, id).fetchHistory();
    id = hist.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  const runId = chain.at(-2);
  if (!runId) throw new Error('the run did not continue as new');
  const hist = await h.env.client.workflow.getHandle(run.workflowId, runId).fetchHistory();
  // saveTrace is a local activity: its marker, not a scheduled activity.
  if (!hist.events?.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity'))
    throw new Error('the run paged out no trace');
  return { workflowId: run.workflowId, runId };
}

/** The scenarios recorded: each starts a run, drives it to its end, returns the run ids to save. */
const scenarios: Record<string, (h: Harness) => Promise<{ workflowId: string; runId: string }>> = {
  async 'polling-completed'(h) {
    const poll = { tool: 'poll_job', args: { jobId: 'hist-job' } };
    const run = await h.start(
      live([
        { tool: 'start_job', args: { name: 'hist-job', pollsNeeded: 3 } },
        poll,
        poll,
        poll,
        { tool: 'write_record', args: { id: 'hist-1', body: 'b' } },
        { tool: 'complete_task', args: { summary: 'ok' } },
      ]),
    );
    await runResult(run);
    return { workflowId: run.workflowId, runId: run.handle.firstExecutionRunId };
  },
  async 'exact-repeat-stopped'(h) {
    const run = await h.start(live([search('temporal'), search('temporal'), search('temporal')]));
    await runResult(run);
    return { workflowId: run.workflowId, runId: run.handle.firstExecutionRunId };
  },
  async 'resume-refused-then-accepted'(h) {
    const deploy = { tool: 'deploy', args: { service: 'hist-svc', version: '1' } };
    const run = await h.start(
      live([deploy, deploy, { tool: 'complete_task', args: { summary: 'deployed' } }], {
        resumeWindowMs: 60_000,
      }),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    await run.handle.executeUpdate(resumeUpdate, { args: [{ actor: 'a', reason: 'r', requestId: 'u-1' }] });
    await h.deps.world.grant('deploy:hist-svc');
    await run.handle.signal(resumeSignal, { actor: 'a', reason: 'granted', requestId: 's-1' });
    await run.handle.signal(resumeSignal, { actor: 'a', reason: 'granted', requestId: 's-1' });
    await runResult(run);
    return { workflowId: run.workflowId, runId: run.handle.firstExecutionRunId };
  },
  async 'operator-stop-during-wait'(h) {
    const run = await h.start(
      fixture([
        { tool: 'poll', args: {}, result: { kind: 'PENDING', code: 'running', retryAfterMs: 60_000 } },
        { tool: 'poll', args: {} },
      ]),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.lastDecision === 'wait_bounded',
    );
    await run.handle.signal(stopSignal, { actor: 'oncall', reason: 'stop', requestId: 'k-1' });
    await runResult(run);
    return { workflowId: run.workflowId, runId: run.handle.firstExecutionRunId };
  },
  async 'approval-stop-resumed'(h) {
    // Current shape: an approval stop, a resume refused (no approval yet), one accepted.
    const transfer = { from: 'acc-1', to: 'acc-2', amountCents: 700, reference: 'hist-inv' };
    const run = await h.start(
      live(
        [
          { tool: 'transfer_funds', args: transfer },
          { tool: 'complete_task', args: { summary: 'paid' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const report = await run.handle.query(reportQuery);
    const resume = (requestId: string) =>
      run.handle.executeUpdate(resumeUpdate, { args: [{ actor: 'alice', reason: 'approved', requestId }] });
    await resume('r-1');
    await ApprovalStore.over(h.deps.ledger).grant({
      runId: run.workflowId,
      stopRef: report?.last_safe_checkpoint as string,
      tool: 'transfer_funds',
      fingerprint: report?.blocked_call?.fingerprint as string,
      argsHash: report?.blocked_call?.args_digest as string,
      actor: 'alice',
      reason: 'invoice checked',
      ttlMs: 60_000,
    });
    await resume('r-2');
    await runResult(run);
    return { workflowId: run.workflowId, runId: run.handle.firstExecutionRunId };
  },
  async 'operator-stop-resumed'(h) {
    // Current shape: an operator stop verified while the run waits, then lifted by a resume signal.
    const run = await h.start(
      fixture(
        [
          { tool: 'poll', args: {}, result: { kind: 'PENDING', code: 'running', retryAfterMs: 60_000 } },
          { tool: 'finish', args: {}, result: { kind: 'SUCCESS', terminal: true, data: { summary: 'ok' } } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.lastDecision === 'wait_bounded',
    );
    await run.handle.signal(stopSignal, { actor: 'oncall', reason: 'stop', requestId: 'k-1' });
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    await run.handle.signal(resumeSignal, { actor: 'oncall', reason: 'go on', requestId: 's-1' });
    await run.handle.signal(resumeSignal, { actor: 'oncall', reason: 'go on', requestId: 's-1' });
    await runResult(run);
    return { workflowId: run.workflowId, runId: run.handle.firstExecutionRunId };
  },
  async 'steered-then-completed'(h) {
    // Steering (issue 17): the third search is steered, not run; the script writes and completes.
    const run = await h.start(
      live(
        [
          search('steer'),
          search('steer'),
          search('steer'),
          { tool: 'write_record', args: { id: 'hist-steer', body: 'b' } },
          { tool: 'complete_task', args: { summary: 'ok' } },
        ],
        { guard: { steerLimit: 1 } },
      ),
    );
    await runResult(run);
    return { workflowId: run.workflowId, runId: run.handle.firstExecutionRunId };
  },
  async 'sub-agent-stopped-resumed'(h) {
    // Sub-agents (issue 18): the parent waits on its child's permission stop, the child is
    // resumed, the parent completes. The parent's history is the one recorded.
    const deploy = { tool: 'deploy', args: { service: 'hist-tree', version: '1' } };
    const child = { calls: [deploy, { tool: 'complete_task', args: { summary: 'child' } }] };
    const run = await h.start(
      live(
        [
          {
            tool: 'spawn_agent',
            args: { goal: 'deploy', tools: ['deploy', 'complete_task'], script: child },
          },
          { tool: 'complete_task', args: { summary: 'ok' } },
        ],
        { subAgents: {}, resumeWindowMs: 60_000 },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.guardReason === 'child_stopped',
    );
    await h.deps.world.grant('deploy:hist-tree');
    await h.env.client.workflow
      .getHandle(`${run.workflowId}/sub-1`)
      .executeUpdate(resumeUpdate, { args: [{ actor: 'oncall', reason: 'granted', requestId: 't-1' }] });
    await runResult(run);
    return { workflowId: run.workflowId, runId: run.handle.firstExecutionRunId };
  },
  async 'deploy-granted-resumed'(h) {
    // Each turn after a call planned by that call's runTool (issue 19), the first by the local
    // `plan`; a write among them; the stop discards the planned turn, the resumed run plans afresh.
    const write = { tool: 'write_record', args: { id: 'hist-prefetch', body: 'b' } };
    return deployGrantedAfterStop(h, 'hist-prefetch', [search('prefetch plan'), write], 'p-1');
  },
  async 'continued-as-new-first-run'(h) {
    const calls = Array.from({ length: 8 }, (_, i) => search(`nothing-${i}`));
    const run = await h.start(live(calls, { maxHistoryEvents: 40, guard: { noProgressLimit: 20 } }));
    await runResult(run);
    return { workflowId: run.workflowId, runId: run.handle.firstExecutionRunId };
  },
  /** Issue 19 (the lean checkpoint): {@link chainNextToLast}. */
  async 'lean-checkpoint-continued'(h) {
    return chainNextToLast(h, 'lean');
  },
  /**
   * Issue 32 (a script by reference): the first run of a chain whose plain script is long
   * (30 distinct writes, ~25 KB): at its continue-as-new it stores the calls (a local
   * activity) and the next run's input carries their reference.
   */
  async 'script-by-ref-continued'(h) {
    const write = (i: number) => ({ tool: 'write_record', args: { id: `ref-${i}`, body: 'b'.repeat(800) } });
    const calls = [
      ...Array.from({ length: 30 }, (_, i) => write(i)),
      { tool: 'complete_task', args: { summary: 'ok' } },
    ];
    const run = await h.start(
      live(calls, { maxHistoryEvents: 40, guard: { noProgressLimit: 50, maxSteps: 100 } }),
    );
    const r = await runResult(run);
    if (r.terminal_state !== 'COMPLETED' || r.executed !== 31)
      throw new Error(`unexpected ${JSON.stringify(r)}`);
    const runId = run.handle.firstExecutionRunId;
    const hist = await h.env.client.workflow.getHandle(run.workflowId, runId).fetchHistory();
    const markers = (hist.events ?? [])
      .map((e) => e.markerRecordedEventAttributes?.markerName)
      .filter(Boolean);
    if (!markers.includes('core_local_activity')) throw new Error('the run stored no script');
    return { workflowId: run.workflowId, runId };
  },
};

interface Recorded {
  workflowId: string;
  history: unknown;
}

function load(name: string): Recorded {
  return JSON.parse(readFileSync(join(DIR, name), 'utf8')) as Recorded;
}

/** A stored history back to the proto object the replayer takes. */
function toHistory(json: unknown): temporal.api.history.v1.History {
  return historyFromJSON(json) as temporal.api.history.v1.History;
}

const files = (): string[] =>
  readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .sort();

(RECORD ? describe : describe.skip)('record histories (RECORD_HISTORIES=1)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });
  it('records every scenario', async () => {
    await Promise.all(
      Object.entries(scenarios)
        .filter(([name]) => recording(name))
        .map(async ([name, drive]) => {
          const { workflowId, runId } = await drive(h);
          const history = await h.env.client.workflow.getHandle(workflowId, runId).fetchHistory();
          const json = JSON.parse(historyToJSON(history)) as unknown;
          writeFileSync(
            join(DIR, `${name}.json`),
            `${JSON.stringify({ workflowId, history: json }, null, 1)}\n`,
          );
        }),
    );
  }, 120_000);
});

describe('recorded histories replay deterministically (no server)', () => {
  it('has the recorded scenarios', () => {
    expect(files()).toEqual(expect.arrayContaining(Object.keys(scenarios).map((n) => `${n}.json`)));
  });

  it('the v1 set records no patch marker (the package has no `patched()` id before its first release)', () => {
    const marked = files().filter((f) =>
      (
        load(f).history as { events: Array<{ markerRecordedEventAttributes?: { markerName?: string } }> }
      ).events.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch'),
    );
    expect(marked).toEqual([]);
  });

  it('replays every history in test/fixtures/histories with the current workflow code', async () => {
    const histories = files().map((f) => {
      const r = load(f);
      return { workflowId: r.workflowId, history: toHistory(r.history) };
    });
    const results: Array<{ workflowId: string; error?: unknown }> = [];
    for await (const res of Worker.runReplayHistories(
      { workflowBundle: await workflowBundle(), sinks: agentSinks() },
      histories,
    )) {
      results.push({ workflowId: res.workflowId, error: res.error });
    }
    expect(results).toHaveLength(histories.length);
    expect(results.filter((x) => x.error)).toEqual([]);
  }, 60_000);

  it('a tampered history (an activity type renamed) fails with DeterminismViolationError', async () => {
    const rec = load('polling-completed.json');
    const history = JSON.parse(JSON.stringify(rec.history)) as {
      events: Array<{ activityTaskScheduledEventAttributes?: { activityType?: { name?: string } } }>;
    };
    const scheduled = history.events.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool',
    );
    expect(scheduled.length).toBeGreaterThan(0);
    scheduled[0]!.activityTaskScheduledEventAttributes!.activityType!.name = 'runToolRenamed';
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: await workflowBundle(), sinks: agentSinks() },
        toHistory(history),
        rec.workflowId,
      ),
    ).rejects.toBeInstanceOf(DeterminismViolationError);
  }, 60_000);

  it('a tampered history (two scheduled activities swapped) fails with DeterminismViolationError', async () => {
    const rec = load('polling-completed.json');
    const history = JSON.parse(JSON.stringify(rec.history)) as {
      events: Array<{ activityTaskScheduledEventAttributes?: { activityType?: { name?: string } } }>;
    };
    // The first `currentProgress` and the first `runTool` trade places: the order of commands changed.
    const attrs = history.events
      .map((e) => e.activityTaskScheduledEventAttributes)
      .filter((a) => a?.activityType);
    const progress = attrs.find((a) => a!.activityType!.name === 'currentProgress')!;
    const tool = attrs.find((a) => a!.activityType!.name === 'runTool')!;
    expect(progress && tool).toBeTruthy();
    [progress.activityType!.name, tool.activityType!.name] = [
      tool.activityType!.name,
      progress.activityType!.name,
    ];
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: await workflowBundle(), sinks: agentSinks() },
        toHistory(history),
        rec.workflowId,
      ),
    ).rejects.toBeInstanceOf(DeterminismViolationError);
  }, 60_000);
});
