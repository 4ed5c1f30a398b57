/**
 * Issue 3 item 11, part 9: the durable run agrees with the offline replay (docs/spec.md §6).
 *
 * Every trace fixture in test/fixtures/traces/*.json (whatever exists when the suite
 * runs) is started as a real `agentRun` in script (fixture) mode, and the RunResult's
 * `terminal_state, reason, executed, cached, stopped_at, decisions, report` must equal
 * `replay(parseReplayFile(file))` exactly — the comparison outside checkers make.
 *
 * The workflow takes the file's `config`, `completed` and `initialProgressVersion` itself,
 * as the replay does, so the run input is just the script.
 *
 * WHICH FILES (the time rule). The replay reads time from each call's virtual `atMs`;
 * the workflow reads workflow time, which advances by exactly the durable waits it takes
 * (after RETRYABLE/PENDING: the result's `retryAfterMs`, else 1000 ms) plus a few ms of
 * real latency per call. So a file is compared iff its outcome does not depend on the
 * difference: we replay it once more with every `atMs` replaced by the clock the durable
 * run would see (the sum of the waits before that call), and include it only when
 *   (a) that replay gives the same outcome as the file as written,
 *   (b) the simulated clock stays <= 5 s (suite time), and
 *   (c) it ends at least 5 s below the file's `maxMs` (real latency cannot hit the budget).
 * Skipped files are listed in a test so a reader sees what was not compared and why.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RunInput } from '../../common/contracts';
import { parseReplayFile, replay, type ReplayCall, type ReplayFile, type ReplayOutcome } from '../../guard';
import { buildRunInput } from '../../client/commands/start';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const TRACES = resolve(__dirname, '../fixtures/traces');
const DEFAULT_WAIT_MS = 1000; // workflows/agent-run.ts: wait when no retryAfterMs is given
const MAX_SIM_MS = 5000;
const MAX_MS_MARGIN = 5000;

/**
 * The blocked call without its `args_digest`: the durable run's worker computes that SHA-256
 * (what an approval binds, issue 31); the pure offline replay has no digest to give.
 */
const withoutDigest = (report: ReplayOutcome['report']) => {
  if (!report) return report;
  // So is an idempotency_conflict's `conflict` (issue 30): the durable run names the key's
  // holder from its ledger and trace; the offline replay has neither.
  const { conflict: _conflict, ...rest } = report;
  if (!rest.blocked_call) return rest;
  const { args_digest: _digest, ...call } = rest.blocked_call;
  return { ...rest, blocked_call: call };
};

/** The replay's comparable fields. */
const comparable = (o: ReplayOutcome) => ({
  terminal_state: o.terminal_state,
  reason: o.reason,
  executed: o.executed,
  cached: o.cached,
  stopped_at: o.stopped_at,
  decisions: o.decisions,
  report: withoutDigest(o.report),
});

/** The file with each `atMs` replaced by the durable run's own clock; null if it never settles. */
function withWorkflowClock(file: ReplayFile): { file: ReplayFile; endMs: number } {
  const calls = file.calls.map((c) => ({ ...c }));
  let clock = 0;
  for (let i = 0; i < calls.length; i++) {
    calls[i] = { ...calls[i]!, atMs: clock };
    // Decide call i with calls 0..i on the simulated clock; a wait follows only when the
    // workflow would really sleep (after() said retry_after_backoff / wait_bounded).
    const out = replay({ ...file, calls: calls.slice(0, i + 1) });
    const d = out.decisions[i];
    if (!d) break; // the run ended before this call
    if (d.after === 'retry_after_backoff' || d.after === 'wait_bounded') {
      const r = (calls[i] as ReplayCall).result as { retryAfterMs?: number } | undefined;
      clock += r?.retryAfterMs ?? DEFAULT_WAIT_MS;
    }
  }
  return { file: { ...file, calls }, endMs: clock };
}

interface Case {
  name: string;
  file: ReplayFile;
  expected: ReplayOutcome;
  skip: string | null;
}

function loadCases(): Case[] {
  return readdirSync(TRACES)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((name) => {
      const file = parseReplayFile(JSON.parse(readFileSync(join(TRACES, name), 'utf8')));
      const expected = replay(file);
      const sim = withWorkflowClock(file);
      const maxMs = file.config?.maxMs ?? 60_000;
      let skip: string | null = null;
      if (JSON.stringify(comparable(replay(sim.file))) !== JSON.stringify(comparable(expected))) {
        skip = 'outcome depends on the virtual clock (atMs)';
      } else if (sim.endMs > MAX_SIM_MS) {
        skip = `durable waits add up to ${sim.endMs} ms`;
      } else if (maxMs !== null && sim.endMs + MAX_MS_MARGIN > maxMs) {
        skip = `wall-clock budget ${maxMs} ms too close to real time`;
      }
      return { name, file, expected, skip };
    });
}

/** The run input that plays a replay file through the real workflow. */
export function runInputOf(file: ReplayFile, raw: unknown): RunInput {
  return {
    goal: `replay ${file.name ?? 'fixture'}`,
    // The workflow itself takes the file's config, completed keys and initial version.
    planner: { kind: 'scripted', script: raw },
    resumeWindowMs: 200,
  };
}

/** The run input `agentctl start --script FILE` builds (the CLI path: `guard: {}`, `live: false`). */
function cliInputOf(path: string): RunInput {
  return { ...buildRunInput({ planner: 'scripted', script: path, timeout: 300 }), resumeWindowMs: 200 };
}

const cases = loadCases();
const included = cases.filter((c) => c.skip === null);

describe('durable run == offline replay for every time-independent trace fixture', () => {
  let h: Harness;
  const results = new Map<string, Promise<ReplayOutcome>>();
  beforeAll(async () => {
    h = await startHarness();
    // Start every run at once; each test awaits its own.
    for (const c of included) {
      const raw = JSON.parse(readFileSync(join(TRACES, c.name), 'utf8')) as Record<string, unknown>;
      for (const [path, input] of [
        ['api', runInputOf(c.file, raw)],
        ['cli', cliInputOf(join(TRACES, c.name))],
      ] as const)
        results.set(
          `${path}:${c.name}`,
          h.start(input).then(async (run) => {
            const r = await runResult(run);
            // The fixture counter is the number of runTool activities that really ran.
            const counts = await h.counters(run.workflowId);
            const ran = Object.values(counts).reduce((a, b) => a + b, 0);
            if (ran !== r.executed)
              throw new Error(`${c.name}: ${ran} tool activities ran, RunResult says ${r.executed}`);
            return comparable(r as unknown as ReplayOutcome);
          }),
        );
    }
    // Avoid unhandled rejections before the tests attach.
    for (const p of results.values()) p.catch(() => undefined);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('compares most of the fixtures and lists the rest', () => {
    const skipped = cases.filter((c) => c.skip !== null).map((c) => `${c.name}: ${c.skip}`);
    // Documented for the reader of the test log.
    if (skipped.length) console.info(`not compared (time rule):\n  ${skipped.join('\n  ')}`);
    expect(included.length).toBeGreaterThanOrEqual(Math.ceil(cases.length / 2));
  });

  it.each(included.map((c) => [c.name, c] as const))('%s (client API input)', async (_name, c) => {
    const got = await results.get(`api:${c.name}`);
    expect(got).toEqual(comparable(c.expected));
  });

  it.each(included.map((c) => [c.name, c] as const))(
    '%s (agentctl start --script input)',
    async (_name, c) => {
      const got = await results.get(`cli:${c.name}`);
      expect(got).toEqual(comparable(c.expected));
    },
  );

  it('compares files whose config, completed keys or initial version differ from the defaults', () => {
    const custom = included.filter(
      (c) => c.file.config !== undefined || c.file.completed !== undefined || c.file.initialProgressVersion,
    );
    expect(custom.map((c) => c.name)).toEqual(
      expect.arrayContaining(['cost-budget.json', 'token-budget.json', 'resume-with-completed-keys.json']),
    );
  });
});
