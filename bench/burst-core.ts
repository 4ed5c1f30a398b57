/**
 * A burst of people's messages to one conversation, shared by
 * test/conversation/honest-answers.test.ts (a small burst) and `npm run bench:burst` (1,000
 * messages from 50 clients): every message sent at once, each client on its own connection,
 * each message with its own id. What came back is sorted: accepted (`answer`, `queued`),
 * refused with a reason (the queue limit, the conversation busy with a retry-after hint, other),
 * `unconfirmed`, or thrown (a bare SDK error: what must never happen).
 */
import type { Client } from '@temporalio/client';
import { sendMessage, type MessageOutcome } from '../client/conversation';

/** The text of burst message `i` (`burst-<tag>-<i>`, a token no other message contains). */
export const burstText = (tag: string, i: number): string => `burst-${tag}-${i} hello`;

/** What a burst came back with. */
export interface BurstFigures {
  readonly sent: number;
  readonly clients: number;
  readonly answer: number;
  readonly queued: number;
  /** Refused because the bounded queue was full (the run's validator). */
  readonly refusedQueueFull: number;
  /** Refused for load (Temporal's limits), with `retryAfterMs`. */
  readonly refusedBusy: number;
  /** Refused for another reason (each has one). */
  readonly refusedOther: number;
  readonly unconfirmed: number;
  /** Calls that threw instead of answering (must be 0). */
  readonly threw: number;
  /** Answers without a reason (must be 0). */
  readonly withoutReason: number;
  readonly seconds: number;
}

/** One burst: `n` messages to `workflowId`, message i from `clients[i % clients.length]`, all at once. */
export async function burst(
  clients: readonly Client[],
  workflowId: string,
  n: number,
  tag: string,
  confirmMs?: number,
): Promise<{ figures: BurstFigures; outcomes: Array<MessageOutcome | null>; errors: string[] }> {
  const started = Date.now();
  const errors: string[] = [];
  const outcomes = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      sendMessage(clients[i % clients.length]!, workflowId, burstText(tag, i), {
        messageId: `burst-${tag}-${i}`,
        ...(confirmMs ? { confirmMs } : {}),
      }).catch((err: unknown) => {
        errors.push(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
        return null;
      }),
    ),
  );
  const count = (f: (o: MessageOutcome) => boolean) => outcomes.filter((o) => o !== null && f(o)).length;
  const refused = (o: MessageOutcome) => o.action === 'refused';
  const figures: BurstFigures = {
    sent: n,
    clients: clients.length,
    answer: count((o) => o.action === 'answer'),
    queued: count((o) => o.action === 'queued'),
    refusedQueueFull: count((o) => refused(o) && /the queue limit is/.test(o.reason)),
    refusedBusy: count((o) => refused(o) && o.retryAfterMs !== undefined),
    refusedOther: count(
      (o) => refused(o) && o.retryAfterMs === undefined && !/the queue limit is/.test(o.reason),
    ),
    unconfirmed: count((o) => o.action === 'unconfirmed'),
    threw: errors.length,
    withoutReason: count((o) => !o.accepted && o.reason.trim() === ''),
    seconds: +((Date.now() - started) / 1000).toFixed(1),
  };
  return { figures, outcomes, errors };
}

/**
 * The people follow the hint: every message refused busy is sent again, with the same id and
 * text, after its `retryAfterMs`, round after round, until none is busy or `untilMs` passes.
 * Updates `outcomes` in place; returns the rounds it took and the messages still busy.
 */
export async function followHints(
  clients: readonly Client[],
  workflowId: string,
  tag: string,
  outcomes: Array<MessageOutcome | null>,
  untilMs: number,
  onAnswer: (i: number, o: MessageOutcome) => void = () => undefined,
): Promise<{ rounds: number; stillBusy: number }> {
  let rounds = 0;
  for (;;) {
    const busy = outcomes.flatMap((o, i) => (o?.retryAfterMs !== undefined ? [i] : []));
    if (busy.length === 0 || Date.now() > untilMs) return { rounds, stillBusy: busy.length };
    rounds += 1;
    await new Promise((r) => setTimeout(r, Math.max(...busy.map((i) => outcomes[i]!.retryAfterMs!))));
    await Promise.all(
      busy.map(async (i) => {
        const o = await sendMessage(clients[i % clients.length]!, workflowId, burstText(tag, i), {
          messageId: `burst-${tag}-${i}`,
        });
        outcomes[i] = o;
        onAnswer(i, o);
      }),
    );
  }
}

/** How often each accepted burst message appears in `modelText` (what the model was sent): each must be 1. */
export function timesSeen(
  outcomes: ReadonlyArray<MessageOutcome | null>,
  tag: string,
  modelText: string,
): Map<number, number> {
  const seen = new Map<number, number>();
  outcomes.forEach((o, i) => {
    if (!o?.accepted) return;
    const re = new RegExp(`burst-${tag}-${i}(?!\\d)`, 'g');
    seen.set(i, (modelText.match(re) ?? []).length);
  });
  return seen;
}
