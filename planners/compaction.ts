/**
 * Compaction: what keeps every model request within the context window (docs/planners.md).
 * When older turns are left out, a head (the goal and the {@link runStateNote}) stands in for
 * them; {@link compactMessages} picks the longest suffix of the conversation that fits.
 * Pure and deterministic: the same conversation, facts and budget give the same request.
 */
import type { RunFacts } from '../common/planner';

/** What is said about the run when older turns are left out of a request. */
export function runStateNote(facts: RunFacts | null | undefined, omitted: number): string {
  const lines = [
    `[Run state. ${omitted} earlier message(s) of this conversation were compacted out of this request; ` +
      'the most recent turns follow verbatim.]',
  ];
  if (facts) {
    lines.push(`Steps taken: ${facts.steps}. Progress version: ${facts.progressVersion}.`);
    const recent = facts.recentCompleted.length > 0 ? ` (newest: ${facts.recentCompleted.join(', ')})` : '';
    lines.push(`Operations completed: ${facts.completedOperations}${recent}. Do not repeat them.`);
    lines.push(`Guard stops so far: ${facts.stops.length > 0 ? facts.stops.join('; ') : 'none'}.`);
    lines.push(
      `Refused resumes: ${facts.refusedResumes.length > 0 ? facts.refusedResumes.join('; ') : 'none'}.`,
    );
    const b = facts.budgetsLeft;
    const left = [
      b.steps !== undefined ? `${b.steps} steps` : null,
      b.tokens !== undefined ? `${b.tokens} tokens` : null,
      b.costUsd !== undefined ? `$${b.costUsd.toFixed(4)}` : null,
      b.ms !== undefined ? `${Math.floor(b.ms / 1000)} s` : null,
    ].filter((x): x is string => x !== null);
    lines.push(`Budgets left: ${left.length > 0 ? left.join(', ') : 'unlimited'}.`);
  }
  return lines.join('\n');
}

/**
 * The messages one request sends, within `budgetChars` characters of message JSON:
 * the conversation as it is when all of it is visible and fits, else a head (the goal and
 * the run-state note, as one user message) followed by the longest suffix of the
 * conversation that fits and starts at a model message — so every tool result still
 * follows the call it answers, as both APIs demand. Null when not even the newest model
 * message and what follows it fit. Deterministic: the same conversation, facts and budget
 * always give the same request.
 */
export function compactMessages<M>(
  messages: readonly M[],
  hidden: number,
  budgetChars: number,
  isAssistant: (m: M) => boolean,
  head: (omitted: number) => M,
): M[] | null {
  const sizes = messages.map((m) => JSON.stringify(m).length);
  const total = sizes.reduce((a, b) => a + b, 0);
  if (hidden === 0 && total <= budgetChars) return [...messages];
  let suffix = total;
  for (let i = 0; i < messages.length; i++) {
    const omitted = hidden + i;
    // In a whole conversation the first message is the goal: the head replaces it.
    if ((hidden > 0 || i > 0) && isAssistant(messages[i]!)) {
      const h = head(omitted);
      if (JSON.stringify(h).length + suffix <= budgetChars) return [h, ...messages.slice(i)];
    }
    suffix -= sizes[i]!;
  }
  return null;
}
