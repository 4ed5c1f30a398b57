/**
 * `ledgerReaper`: the action of the ledger reaper's Temporal Schedule (worker/reaper-schedule.ts).
 * One activity does the work — deletes settled ledger records older than the retention whose
 * runs are closed (activities/reaper.ts) — so the schedule gets Temporal's retries, history
 * and visibility for free, and a pass that overlaps the previous one is skipped by the
 * schedule's overlap policy instead of racing it. Workflow code: the activity is a type import.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ReapLedgerInput, ReapLedgerOutput, ReaperActivities } from '../activities/reaper';

const { reapLedger } = proxyActivities<ReaperActivities>({
  startToCloseTimeout: '30 minutes',
  // The activity heartbeats once per batch of status checks.
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '10s', maximumInterval: '5 minutes', maximumAttempts: 5 },
});

/** One reaper pass; returns what it deleted and what it kept. */
export async function ledgerReaper(input: ReapLedgerInput): Promise<ReapLedgerOutput> {
  return reapLedger(input);
}
