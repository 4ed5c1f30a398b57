/**
 * How big a model request may be: the model's context window in tokens (the
 * planner spec's `contextTokens`, else the known window of the model, else a conservative
 * default), turned into a character budget for the conversation part of a request.
 *
 * Characters, not tokens, because the planner has no tokenizer for every model: it assumes
 * {@link CHARS_PER_TOKEN} characters per token, fewer than English prose or JSON really take
 * (≈ 4), so the estimate errs on the side of a smaller request. A provider that still refuses
 * a request as too long gets one retry at {@link TIGHTER} of the budget.
 */
import type { PlannerSpec } from '../common/planner';

/** Characters per token the budget assumes (conservative: real text has more). */
export const CHARS_PER_TOKEN = 3;
/** The window assumed for a model this table does not know (a local model, a new one). */
export const DEFAULT_CONTEXT_TOKENS = 32_768;
/** Share of the budget the retry after a provider's `context_length_exceeded` uses. */
export const TIGHTER = 0.5;
/** Share of the window kept free for what the estimate does not see (message framing, tool-call ids). */
const SAFETY = 0.05;

/** Known context windows, by model-id prefix (longest prefix wins). */
const KNOWN_WINDOWS: ReadonlyArray<readonly [string, number]> = [
  ['claude-', 200_000],
  ['gpt-4.1', 1_047_576],
  ['gpt-4o', 128_000],
  ['gpt-4-turbo', 128_000],
  ['gpt-4', 8_192],
  ['gpt-3.5-turbo', 16_385],
  ['gpt-5', 272_000],
  ['o1', 200_000],
  ['o3', 200_000],
  ['o4-mini', 200_000],
];

type LlmSpec = Exclude<PlannerSpec, { kind: 'scripted' }>;

/** The context window (tokens) of the spec's model. */
export function contextTokensOf(spec: LlmSpec): number {
  if (spec.contextTokens !== undefined) return spec.contextTokens;
  let best: readonly [string, number] | undefined;
  for (const entry of KNOWN_WINDOWS) {
    if (spec.model.startsWith(entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
  }
  return best?.[1] ?? DEFAULT_CONTEXT_TOKENS;
}

/**
 * Characters the conversation's messages may take in one request: the window, less the
 * reply's `maxTokens`, the system prompt and the tool list (both sent with every request),
 * and a safety share. Never negative.
 */
export function messageBudgetChars(spec: LlmSpec, toolsChars: number): number {
  const windowChars = contextTokensOf(spec) * CHARS_PER_TOKEN;
  const fixed = spec.maxTokens * CHARS_PER_TOKEN + (spec.system?.length ?? 0) + toolsChars;
  return Math.max(0, Math.floor(windowChars * (1 - SAFETY) - fixed));
}
