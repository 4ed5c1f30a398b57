/**
 * The request gate: the check one model request passes just before it is sent (the run's
 * budget and the tenant's spend limit: planners/call-ceiling.ts), and the report after it of
 * how it ended, so what a request cost is counted once whatever happens to it. Every request
 * of the turn engine goes through {@link gatedRequest}, a turn's and a final word's alike;
 * kept apart from the engine (llm-common.ts) because the gate is the money's side of a request,
 * with a contract of its own that call-ceiling.ts implements.
 */
import type { Usage } from '../guard/schemas';
import { UnreadableReplyError } from './errors';
import type { ModelReply, ProviderAdapter } from './llm-common';

/** What a {@link RequestGate} is told about the call it let through. */
export interface GatedCall {
  /**
   * The model answered with this usage, its reply ending `finish` (`done`, `truncated`, `other`,
   * `unreadable`); answers the usage the request counts (an estimate where the server said nothing).
   */
  answered(usage: Usage, finish?: string): Promise<Usage>;
  /** The request failed with `err` (the model may or may not have billed it). */
  failed(err: unknown): Promise<void>;
}

/**
 * Checks one request before it is sent (its output limit `maxTokens` when it is not the
 * spec's); throws to refuse it (see {@link TurnOptions.gate}).
 */
export type RequestGate<M> = (request: readonly M[], maxTokens?: number) => Promise<GatedCall>;

/** Sends one request through the gate: refused before it is sent, or told how it ended. */
export async function gatedRequest<M>(
  adapter: ProviderAdapter<M>,
  request: readonly M[],
  gate: RequestGate<M> | undefined,
  maxTokens?: number,
  toolChoice?: 'none',
): Promise<ModelReply<M>> {
  const options =
    maxTokens === undefined && toolChoice === undefined
      ? undefined
      : { ...(maxTokens !== undefined ? { maxTokens } : {}), ...(toolChoice ? { toolChoice } : {}) };
  if (!gate) return adapter.request(request, options);
  const call = await gate(request, maxTokens);
  let reply: ModelReply<M>;
  try {
    reply = await adapter.request(request, options);
  } catch (err) {
    // A reply that answered but could not be read was billed: settled at what it cost.
    if (err instanceof UnreadableReplyError)
      throw err.withUsage(await call.answered(err.usage, 'unreadable'));
    await call.failed(err);
    throw err;
  }
  // Recorded the moment it arrives, outside the attempt; counted as the gate says.
  const usage = await call.answered(reply.usage, reply.finish ?? 'done');
  return usage === reply.usage ? reply : { ...reply, usage };
}
