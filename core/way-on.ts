/**
 * The way on from a stop, as a person reads it where they look (the Temporal UI's current
 * details, the resume window's timer): the command that lets the run go on, by the stop
 * reason's lift rule (guard/reasons.ts). Sandbox-safe: workflow code and the client use it.
 */
import { liftRuleOf, raiseKeyOf, type BudgetKey } from '../guard';

/** `agentctl resume`'s flag for raising each budget. */
const RAISE_FLAG: Readonly<Record<BudgetKey, string>> = {
  maxSteps: '--raise-steps',
  maxMs: '--raise-ms',
  maxTokens: '--raise-tokens',
  maxCostUsd: '--raise-cost-usd',
  maxWaitPolls: '--raise-wait-polls',
};

/** What a stop says about itself for {@link wayOnCommand}. */
export interface StopForWayOn {
  readonly reason: string;
  /** The write's operation key (an `outcome_unknown` stop is settled by it). */
  readonly operationKey?: string | null;
}

/** The exact command (or commands, in order) that lets a run stopped for `stop.reason` go on. */
export function wayOnCommand(runId: string, stop: StopForWayOn): string {
  const resume = `agentctl resume ${runId} --reason "…"`;
  switch (liftRuleOf(stop.reason)) {
    case 'raise': {
      const key = raiseKeyOf(stop.reason);
      return `agentctl resume ${runId} ${key ? RAISE_FLAG[key] : '--raise-steps'} <more than used> --reason "…"`;
    }
    case 'approval':
      return `agentctl approvals approve ${runId} --reason "…" --resume`;
    case 'ledger_settled':
      return `agentctl ledger resolve ${stop.operationKey ?? '<operation key>'} --as succeeded|failed --actor <you> --reason "…", then ${resume}`;
    case 'spend':
      return `agentctl spend raise --tenant <tenant> --max-usd <cap> --reason "…" (or wait for the window), then ${resume}`;
    case 'child':
      return `agentctl tree ${runId}, then resume the stopped sub-agent`;
    default:
      return resume;
  }
}
