/**
 * bench:traces' recorded runs of real models, decided by the DURABLE run as well (issue 29
 * item 5): a few AgentDojo transcripts, converted by bench/traces/agentdojo.ts (the file says
 * `"profile": "llm"`), started as real `agentRun`s in script (fixture) mode, must end with the
 * offline replay's terminal state, reason, counts, decisions and report, decision for decision;
 * and the tools that really ran are the replay's `executed` (the runtime's counters).
 *
 * The transcripts are the decision-rich ones docs/real-agents.md reads: a success, a labelled
 * failing-call loop (steered twice, stopped), an identical write answered from the ledger, a
 * recovery by changed args that `no_progress` notes and lets through (issue 40), and a sweep of
 * repeated reads and DMs that goes on after its notes and is stopped `no_progress`. None waits (no RETRYABLE or PENDING), and each ends within seconds of the
 * `llm` profile's 20-minute clock, so the durable run's workflow time cannot change a decision.
 */
import { join } from 'node:path';
import type { RunInput } from '../../common/contracts';
import { parseReplayFile, replay, type ReplayOutcome } from '../../guard';
import { AGENTDOJO_DIR, convertRun, readDataset } from '../../bench/traces/agentdojo';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const PICKS: ReadonlyArray<readonly [string, string]> = [
  ['gpt-4o-2024-05-13', 'banking/user_task_0'],
  ['claude-3-haiku-20240307', 'slack/user_task_3'],
  ['gpt-4o-mini-2024-07-18', 'banking/injection_task_6'],
  ['command-r', 'travel/injection_task_2'],
  ['gpt-3.5-turbo-0125', 'slack/user_task_13'],
];

const comparable = (o: ReplayOutcome) => {
  // The durable run's worker adds the blocked call's SHA-256 (issue 31); the pure replay has none.
  const report = o.report?.blocked_call
    ? {
        ...o.report,
        blocked_call: { tool: o.report.blocked_call.tool, fingerprint: o.report.blocked_call.fingerprint },
      }
    : o.report;
  return {
    terminal_state: o.terminal_state,
    reason: o.reason,
    executed: o.executed,
    cached: o.cached,
    stopped_at: o.stopped_at,
    decisions: o.decisions,
    report,
  };
};

const cases = PICKS.map(([dataset, task]) => {
  const raw = readDataset(join(AGENTDOJO_DIR, `${dataset}.jsonl.gz`)).find(
    (r) => r.path === `runs/${dataset}/${task}/none/none.json`,
  );
  if (!raw) throw new Error(`no run ${dataset}/${task}`);
  const converted = convertRun(raw);
  return { name: converted.name, script: converted.file, expected: replay(parseReplayFile(converted.file)) };
});

describe('durable run == offline replay on recorded runs of real models (llm profile)', () => {
  let h: Harness;
  const results = new Map<string, Promise<{ outcome: ReplayOutcome; ran: number }>>();
  beforeAll(async () => {
    h = await startHarness();
    for (const c of cases) {
      const input: RunInput = {
        goal: `replay ${c.name}`,
        planner: { kind: 'scripted', script: c.script },
        resumeWindowMs: 200,
      };
      const p = h.start(input).then(async (run) => {
        const r = await runResult(run);
        const counts = await h.counters(run.workflowId);
        const ran = Object.values(counts).reduce((a, b) => a + b, 0);
        return { outcome: r as unknown as ReplayOutcome, ran };
      });
      p.catch(() => undefined);
      results.set(c.name, p);
    }
  });
  afterAll(async () => {
    await h?.close();
  });

  it('the replay decides them as docs/real-agents.md says', () => {
    expect(cases.map((c) => [c.name, c.expected.terminal_state, c.expected.reason])).toEqual([
      ['gpt-4o-2024-05-13/banking/user_task_0', 'COMPLETED', null],
      ['claude-3-haiku-20240307/slack/user_task_3', 'STOPPED_LOOP_GUARD', 'short_cycle'],
      ['gpt-4o-mini-2024-07-18/banking/injection_task_6', 'STOPPED_LOOP_GUARD', 'same_call_repeat'],
      ['command-r/travel/injection_task_2', 'COMPLETED', null],
      ['gpt-3.5-turbo-0125/slack/user_task_13', 'STOPPED_LOOP_GUARD', 'no_progress'],
    ]);
    // The notes are in the decisions both sides compare.
    expect(cases.map((c) => c.expected.decisions.filter((d) => d.reason === 'no_progress').length)).toEqual([
      0, 0, 0, 1, 2,
    ]);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (name, c) => {
    const { outcome, ran } = await results.get(name)!;
    expect(comparable(outcome)).toEqual(comparable(c.expected));
    // Refused and cached calls never reached a tool.
    expect(ran).toBe(c.expected.executed);
  });
});
