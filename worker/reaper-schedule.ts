/**
 * The ledger reaper as a Temporal Schedule (docs/ledger.md "Reaping"): every worker makes
 * sure, at start, that one Schedule with a fixed id starts the `ledgerReaper` workflow at the
 * configured interval. Creating it is idempotent — a second worker (or a restart) finds it
 * (`ScheduleAlreadyRunning`) and only updates it when the interval, retention or task queue
 * it would set differ from the stored ones. One schedule for the whole namespace, not one
 * timer per worker: passes never overlap (policy SKIP) however many replicas run.
 *
 * Embedders that build their own worker call {@link ensureReaperSchedule} with a `Client`.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { DEFAULT_REAP_TTL_MS } from '../storage/ledger';
import { MIN_RETENTION_MS } from '../activities/reaper';
import { ledgerReaper } from '../workflows/ledger-reaper';

/** The one id of the reaper's schedule in a namespace. */
export const REAPER_SCHEDULE_ID = 'agent-loop-guard-ledger-reaper';
/** Default pause between passes: one hour. */
export const DEFAULT_REAPER_INTERVAL_MS = 60 * 60 * 1000;
/** Default retention of settled records (30 days; never below {@link MIN_RETENTION_MS}). */
export const DEFAULT_LEDGER_RETENTION_MS = DEFAULT_REAP_TTL_MS;
/** Shortest interval accepted (the server's own floor for schedule intervals is seconds). */
const MIN_INTERVAL_MS = 10_000;

/** The reaper settings of a worker. */
export interface ReaperSettings {
  /** False (AGENT_REAPER=off): this worker neither creates nor updates the schedule. */
  readonly enabled: boolean;
  /** Retention after the clamp. */
  readonly retentionMs: number;
  /** Time between passes. */
  readonly intervalMs: number;
  /** What was changed on the way (a retention raised to the resume window), for the log. */
  readonly warnings: readonly string[];
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `3600000`, `90s`, `15m`, `1h`, `1d` → milliseconds; undefined when not understood. */
export function parseInterval(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!m) return undefined;
  return Math.round(Number(m[1]) * (UNITS[m[2] ?? 'ms'] as number));
}

const OFF = new Set(['off', 'false', '0', 'no']);
const ON = new Set(['on', 'true', '1', 'yes']);

/**
 * Reads AGENT_REAPER, AGENT_LEDGER_RETENTION_MS and AGENT_REAPER_INTERVAL (worker/env.ts
 * documents them). A retention shorter than the resume window is raised to it with a
 * warning rather than refused: the safe value is known, and the activity clamps again
 * anyway. Throws an Error naming the variable for a value it cannot read.
 */
export function readReaperEnv(env: NodeJS.ProcessEnv = process.env): ReaperSettings {
  const blank = (v: string | undefined) => v === undefined || v.trim() === '';
  const problems: string[] = [];
  const flag = env.AGENT_REAPER?.trim().toLowerCase();
  if (flag !== undefined && flag !== '' && !ON.has(flag) && !OFF.has(flag))
    problems.push('AGENT_REAPER: must be on (default) or off');
  let retentionMs = DEFAULT_LEDGER_RETENTION_MS;
  if (!blank(env.AGENT_LEDGER_RETENTION_MS)) {
    const n = Number(env.AGENT_LEDGER_RETENTION_MS);
    if (!Number.isFinite(n) || n < 0)
      problems.push('AGENT_LEDGER_RETENTION_MS: must be a number of milliseconds >= 0');
    else retentionMs = Math.floor(n);
  }
  let intervalMs = DEFAULT_REAPER_INTERVAL_MS;
  if (!blank(env.AGENT_REAPER_INTERVAL)) {
    const n = parseInterval(env.AGENT_REAPER_INTERVAL as string);
    if (n === undefined || n < MIN_INTERVAL_MS)
      problems.push('AGENT_REAPER_INTERVAL: must be a duration of at least 10s (e.g. 3600000, 15m, 1h, 1d)');
    else intervalMs = n;
  }
  if (problems.length > 0) throw new Error(`Invalid worker environment: ${problems.join('; ')}`);
  const warnings: string[] = [];
  if (retentionMs < MIN_RETENTION_MS) {
    warnings.push(
      `AGENT_LEDGER_RETENTION_MS=${retentionMs} is shorter than the resume window; using ${MIN_RETENTION_MS} ms ` +
        '(a stopped run must find its completed writes when it resumes)',
    );
    retentionMs = MIN_RETENTION_MS;
  }
  return { enabled: flag === undefined || !OFF.has(flag), retentionMs, intervalMs, warnings };
}

/** Options of {@link ensureReaperSchedule}. */
export interface ReaperScheduleOptions {
  /** The task queue the worker hosting `ledgerReaper` and `reapLedger` polls. */
  readonly taskQueue: string;
  readonly retentionMs: number;
  readonly intervalMs: number;
  /** Default {@link REAPER_SCHEDULE_ID}; tests use their own. */
  readonly scheduleId?: string;
}

/** What {@link ensureReaperSchedule} did. */
export type ReaperScheduleResult = {
  readonly scheduleId: string;
  readonly did: 'created' | 'updated' | 'unchanged';
};

/**
 * Creates the reaper's schedule, or brings an existing one to these settings. Safe to call
 * from every worker at every start: only the first creates it, and one whose settings
 * already match is not written at all. (Two workers configured differently take turns
 * winning at their starts; configure them alike.)
 */
export async function ensureReaperSchedule(
  client: Client,
  o: ReaperScheduleOptions,
): Promise<ReaperScheduleResult> {
  const scheduleId = o.scheduleId ?? REAPER_SCHEDULE_ID;
  const retentionMs = Math.max(o.retentionMs, MIN_RETENTION_MS);
  const spec = { intervals: [{ every: o.intervalMs }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: ledgerReaper,
    taskQueue: o.taskQueue,
    // The schedule appends the start time, so each pass has its own id.
    workflowId: scheduleId,
    args: [{ retentionMs }] as [{ retentionMs: number }],
  };
  // A pass that outlasts the interval is not joined by a second one; after an outage one pass catches up.
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: o.intervalMs };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies });
    return { scheduleId, did: 'created' };
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const handle = client.schedule.getHandle(scheduleId);
  const d = await handle.describe();
  const storedArgs = d.action.args?.[0] as { retentionMs?: unknown } | undefined;
  const same =
    d.spec.intervals?.length === 1 &&
    (d.spec.calendars?.length ?? 0) === 0 &&
    d.spec.intervals[0]?.every === o.intervalMs &&
    d.action.workflowType === 'ledgerReaper' &&
    d.action.taskQueue === o.taskQueue &&
    storedArgs?.retentionMs === retentionMs;
  if (same) return { scheduleId, did: 'unchanged' };
  await handle.update((prev) => ({
    spec,
    action,
    policies: { ...prev.policies, ...policies },
    state: { paused: prev.state.paused, note: prev.state.note },
  }));
  return { scheduleId, did: 'updated' };
}
