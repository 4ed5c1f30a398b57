/**
 * One request policy across the plan activity's attempts: a retried turn does not
 * ask again what an earlier attempt already paid for when its outcome is known (a reply cut off
 * at its output limit, an unreadable one); a larger-limit ask happens only when the attempt's
 * time left can hold it; and the requests of one turn are bounded across every attempt. The
 * turn engine (llm-common.ts) calls these; the earlier attempts are read from the served-usage
 * rows (storage/spend/served-usage.ts) the `plan` activity hands the planner.
 */
import { NO_USAGE, type PlannerInput } from '../common/planner';
import { PlannerTimeoutError, TurnRequestBoundError, UnreadableReplyError } from './errors';

/**
 * The most model requests one turn sends across every attempt of its plan activity: one per
 * attempt of the plan activity's default five, plus the larger-limit ask after a cut-off reply.
 * At the bound the turn stops `TurnRequestBoundError` (never retried; the StopReport says so).
 */
export const MAX_TURN_REQUESTS = 6;

/** Time kept beyond a larger-limit ask's predicted duration (the reply's record, the store). */
export const ASK_AGAIN_MARGIN_MS = 2_000;

/** Where a turn starts, from what its earlier attempts did. */
export interface TurnStart {
  /** The first request's output limit (undefined: the spec's). */
  readonly maxTokens?: number;
  /** Larger-limit asks already made (an earlier attempt's cut reply counts as the first ask). */
  readonly asked: number;
  /** Requests earlier attempts sent. */
  readonly sent: number;
  /** An earlier attempt's reply was cut off at the larger limit too: the turn ends truncated, unasked. */
  readonly truncated: boolean;
}

/** Reads the earlier attempts of this turn; throws for a known unreadable reply (never asked again). */
export async function turnStart(input: PlannerInput, specMaxTokens: number | undefined): Promise<TurnStart> {
  const earlier = input.served ? await input.served.earlier() : { requests: 0, lastReply: null };
  const cut = earlier.lastReply;
  if (cut?.finish === 'unreadable')
    throw new UnreadableReplyError('an earlier attempt of this turn got a reply it could not read', NO_USAGE);
  if (cut?.finish === 'truncated' && specMaxTokens !== undefined) {
    if (cut.maxTokens > specMaxTokens) return { asked: 1, sent: earlier.requests, truncated: true };
    // Cut off at the spec's limit by an attempt that then ran out of time: ask with the larger one.
    return { maxTokens: cut.maxTokens * 2, asked: 1, sent: earlier.requests, truncated: false };
  }
  return { asked: 0, sent: earlier.requests, truncated: false };
}

/** Throws {@link TurnRequestBoundError} when the turn has sent its {@link MAX_TURN_REQUESTS}. */
export function assertRequestRoom(sent: number): void {
  if (sent >= MAX_TURN_REQUESTS)
    throw new TurnRequestBoundError(
      `this turn sent ${sent} model requests across its plan attempts, the most one turn may send ` +
        `(${MAX_TURN_REQUESTS}); none more was sent`,
    );
}

/**
 * Throws a {@link PlannerTimeoutError} when asking again with `next` output tokens (a reply twice
 * as long takes about twice as long as the cut one, which took `tookMs`) does not fit the time
 * left in this attempt: the cut reply is recorded, so the next attempt asks with `next` directly.
 */
export function assertTimeForLarger(input: PlannerInput, tookMs: number, limit: number, next: number): void {
  if (!input.served || input.deadlineMs === undefined) return;
  const needMs = tookMs * (next / limit) + ASK_AGAIN_MARGIN_MS;
  const leftMs = input.deadlineMs - Date.now();
  if (needMs <= leftMs) return;
  throw new PlannerTimeoutError(
    needMs,
    `its reply was cut off at ${limit} output tokens after ${Math.round(tookMs / 1000)} s; asking again with ` +
      `${next} needs about ${Math.round(needMs / 1000)} s and this attempt has ${Math.max(0, Math.round(leftMs / 1000))} s ` +
      `left, so the next attempt asks with ${next} directly`,
  );
}
