/** A run's static summary and details, written once at its start (the Temporal UI shows them above its history). */
import type { RunInput } from '../common/contracts';
import { redactText } from '../common/redact';

/**
 * What the run is, in a few lines, for the Temporal UI's static details: the goal, the planner,
 * the budgets it was given (redacted; the current details say how it is doing).
 */
export function staticDetailsOf(input: RunInput): string {
  const p = input.planner;
  const planner =
    p.kind === 'scripted' ? 'scripted' : `${p.kind}${'model' in p && p.model ? ` ${String(p.model)}` : ''}`;
  const budgets = Object.entries(input.guard ?? {})
    .filter(([k, v]) => k.startsWith('max') && typeof v === 'number')
    .map(([k, v]) => `${k} ${String(v)}`);
  return [
    `**goal** ${redactText(input.goal.length > 300 ? `${input.goal.slice(0, 300)}…` : input.goal)}`,
    `**planner** ${planner}${input.tenant ? ` · **tenant** ${input.tenant}` : ''}`,
    `**budgets** ${budgets.length > 0 ? budgets.join(' · ') : 'the worker defaults'}`,
    '**agentctl** status · report · trace · stop · resume <run-id>',
  ].join('\n');
}

/** The workflow start's static summary (the goal, or `summary`) and details. */
export function staticMetadataOf(
  input: RunInput,
  summary: string | undefined,
): { staticSummary: string; staticDetails: string } {
  return { staticSummary: summary ?? input.goal, staticDetails: staticDetailsOf(input) };
}
