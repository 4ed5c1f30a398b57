/**
 * Runs one {@link Scenario}: starts its live scripted agent with the run helpers agentctl
 * uses (../runs.ts), prints a line per trace record, takes the operator steps, and checks
 * the end — terminal state, reason and the real tool execution counters.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { RunInput } from '../common/contracts';
import { PROJECT_ROOT } from '../devserver/temporal-cli';
import type { World } from './world';
import { blockedCallText, formatCounters, table, traceLine, uiLink } from '../client/format';
import { sendResume, settledOutcome, startRun, type RunOutcome } from '../client/runs';
import { readCounters, type Counters } from './world-client';
import type { Expected, Scenario, Step } from './scenarios';

const SCRIPTS_DIR = join(PROJECT_ROOT, 'demo', 'scripts');

/** A stopped demo run waits this long for a resume, then closes with its StopReport. */
const RESUME_WINDOW_MS = 15 * 60_000;

/** How long one settle may take before the demo gives up on a scenario. */
const SETTLE_TIMEOUT_MS = 60_000;

/** What the runner needs from the demo's stack. */
export interface DemoEnv {
  readonly client: Client;
  readonly taskQueue: string;
  readonly namespace: string;
  /** The Web UI's base URL; null when it will not be there to open (`--once` shuts it down). */
  readonly uiBase: string | null;
  /** The in-process worker's world: counters are read and permissions granted there. */
  readonly world: Pick<World, 'counters' | 'grant'>;
  /** Timestamp part of the workflow ids of this demo. */
  readonly stamp: string;
  readonly say: (line?: string) => void;
}

/** What one scenario ended with. */
export interface ScenarioResult {
  readonly key: string;
  readonly title: string;
  readonly workflowId: string;
  readonly state: string;
  readonly reason: string | null;
  readonly counters: Counters;
  readonly ok: boolean;
}

/** The StopReport on one line (`none (COMPLETED)` when there is none). */
export function compactReport(o: RunOutcome): string {
  const r = o.report;
  if (!r) return 'none (COMPLETED)';
  const blocked = blockedCallText(r);
  const parts = [
    `${r.terminal_state}/${r.guard_reason}`,
    blocked ? `blocked ${blocked}` : null,
    r.unmet_precondition ? `unmet "${r.unmet_precondition}"` : null,
    r.resume_condition ? `resume when "${r.resume_condition}"` : null,
    `completed [${r.completed.join(', ')}]`,
    `steps ${r.steps}`,
    `next ${r.next_allowed_action}`,
  ];
  return parts.filter(Boolean).join(' · ');
}

const stateText = (o: Pick<RunOutcome, 'terminal_state' | 'reason'>) =>
  `${o.terminal_state}${o.reason ? ` (${o.reason})` : ''}`;

const matches = (o: RunOutcome, e: Expected) => o.terminal_state === e.state && o.reason === e.reason;

function loadScript(name: string): unknown {
  return JSON.parse(readFileSync(join(SCRIPTS_DIR, `${name}.json`), 'utf8')) as unknown;
}

/**
 * Starts a scenario's script once more, quietly, and waits until it stops (or ends): the run
 * the demo's "Try next" commands are about, stopped after every scenario's write, so what they
 * say about it (an unchanged resume is refused) is what happens.
 */
export async function startStoppedRun(env: DemoEnv, s: Scenario): Promise<string> {
  const workflowId = `demo-try-${s.slug}-${env.stamp}-${randomUUID().slice(0, 4)}`;
  const input: RunInput = {
    goal: s.goal,
    planner: { kind: 'scripted', script: loadScript(s.script), live: true },
    resumeWindowMs: RESUME_WINDOW_MS,
  };
  const handle = await startRun(env.client, { workflowId, taskQueue: env.taskQueue, input });
  await settledOutcome(handle, { timeoutMs: SETTLE_TIMEOUT_MS, pollMs: 150 });
  return workflowId;
}

/** Runs one scenario to its end and prints what happened. */
export async function runScenario(env: DemoEnv, s: Scenario): Promise<ScenarioResult> {
  const { say } = env;
  say(`[${s.key}] ${s.heading}`);
  const input: RunInput = {
    goal: s.goal,
    planner: { kind: 'scripted', script: loadScript(s.script), live: true },
    resumeWindowMs: RESUME_WINDOW_MS,
  };
  const workflowId = `demo-${s.key}-${s.slug}-${env.stamp}-${randomUUID().slice(0, 4)}`;
  const handle = await startRun(env.client, { workflowId, taskQueue: env.taskQueue, input });

  let seen = 0;
  const settle = async (): Promise<RunOutcome> => {
    const settled = await settledOutcome(handle, {
      onRecord: (r) => say(`    · ${traceLine(r)}`),
      timeoutMs: SETTLE_TIMEOUT_MS,
      pollMs: 150,
      seen,
    });
    seen = settled.seen;
    return settled.outcome;
  };

  let outcome = await settle();
  const failed: string[] = [];
  for (const step of s.steps ?? []) {
    if (!(await takeStep(env, handle, step, outcome))) failed.push(stepName(step));
  }
  if (s.steps?.length) outcome = await settle();

  const counters = await readCounters(env.world, workflowId);
  say(`    = ${stateText(outcome)} · executed ${outcome.executed} · cached ${outcome.cached}`);
  say(`    report:   ${compactReport(outcome)}`);
  say(`    counters: ${formatCounters(counters)}`);
  if (env.uiBase) say(`    UI:       ${uiLink(env.uiBase, env.namespace, workflowId)}`);
  const e = s.expect;
  const ok =
    failed.length === 0 &&
    matches(outcome, e) &&
    Object.entries(e.counters).every(([tool, n]) => (counters[tool] ?? 0) === n);
  const check = typeof s.check === 'function' ? s.check(outcome) : s.check;
  say(
    ok
      ? `    ✓ ${check}`
      : `    ✗ UNEXPECTED — wanted ${e.state} ${e.reason ?? ''} ${formatCounters(e.counters)}` +
          (failed.length ? ` (not as expected: ${failed.join('; ')})` : ''),
  );
  say();
  return {
    key: s.key,
    title: s.title,
    workflowId,
    state: outcome.terminal_state,
    reason: outcome.reason,
    counters,
    ok,
  };
}

function stepName(step: Step): string {
  switch (step.kind) {
    case 'stopped':
      return `stop ${step.expect.state} ${step.expect.reason ?? ''}`.trim();
    case 'resume':
      return step.label;
    case 'grant':
      return `grant ${step.permission}`;
  }
}

/** Takes one operator step, printing it; false when the run did not answer as expected. */
async function takeStep(
  env: DemoEnv,
  handle: WorkflowHandle,
  step: Step,
  stopped: RunOutcome,
): Promise<boolean> {
  const { say } = env;
  switch (step.kind) {
    case 'stopped':
      say(`    = ${stateText(stopped)} · report: ${compactReport(stopped)}`);
      say(`    counters: ${formatCounters(await readCounters(env.world, handle.workflowId))}`);
      return matches(stopped, step.expect);
    case 'resume': {
      const answer = await sendResume(handle, {
        actor: 'demo',
        reason: step.reason,
        precondition: step.precondition,
        requestId: randomUUID(),
      });
      const ok = answer.accepted === (step.expect === 'accepted');
      const verdict = answer.accepted
        ? 'ACCEPTED'
        : `REFUSED${answer.rejectedByValidator ? ' by the validator' : ' after re-verification'}`;
      say(`    ↺ ${step.label} → ${verdict}${ok ? '' : ' (unexpected!)'}: ${answer.reason}`);
      return ok;
    }
    case 'grant':
      await env.world.grant(step.permission);
      say(`    ⚙ operator grants the permission: world.grant("${step.permission}")`);
      return true;
  }
}

/** The closing table: one row per scenario. */
export function summaryTable(results: readonly ScenarioResult[]): string {
  return table(results, [
    { header: 'SCENARIO', value: (r) => `${r.key} ${r.title}` },
    { header: 'STATE', value: (r) => r.state },
    { header: 'REASON', value: (r) => r.reason },
    { header: 'COUNTERS', value: (r) => formatCounters(r.counters) },
    { header: 'CHECK', value: (r) => (r.ok ? 'ok' : 'UNEXPECTED') },
    { header: 'WORKFLOW', value: (r) => r.workflowId },
  ]).trimEnd();
}
