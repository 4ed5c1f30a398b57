/** Validation of operator resolutions: who and why are mandatory, so the audit trail is never empty. */
import { z } from 'zod';
import { LedgerStateError } from './errors';
import { toJsonText } from './stored-error';
import { LedgerState, type ResolveInput } from './types';

const ResolveInputSchema = z.object({
  as: z.enum(['succeeded', 'failed']),
  actor: z.string().trim().min(1, 'actor is required (who settles this record)'),
  reason: z.string().trim().min(1, 'reason is required (why: the evidence looked at)'),
  result: z.unknown().optional(),
});

/** `s` as one shell word: as is when it has only safe characters, else single-quoted. */
function shellWord(s: string): string {
  return /^[A-Za-z0-9_:.@%+=,/-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * How an UNKNOWN record is settled by hand, with the complete command (a person copies it,
 * quoted): what every "settle it with" message and `agentctl ledger show` print.
 */
export function settleAdvice(key: string): string {
  return `settle it with "agentctl ledger resolve ${shellWord(key)} --as succeeded --actor NAME --reason 'the evidence checked'" (--as failed if it did not happen)`;
}

/** Validates and trims a {@link ResolveInput}; throws a `TypeError` naming the bad field. */
export function parseResolveInput(input: ResolveInput): ResolveInput {
  const parsed = ResolveInputSchema.safeParse(input);
  if (!parsed.success) {
    throw new TypeError(
      `invalid resolution: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')}`,
    );
  }
  return parsed.data as ResolveInput;
}

/** What an operator resolution writes: the new state and the stored result / error (JSON text). */
export interface ResolutionPlan {
  state: LedgerState;
  prior: LedgerState;
  result: string | null;
  error: string | null;
}

/**
 * Decides an operator resolution for both backends (the rule lives here once): only an
 * UNKNOWN record, or a DISPATCHED one whose lease expired, is settled by hand.
 */
export function planResolution(
  key: string,
  row: { state: LedgerState; leaseRemainingMs: number | null } | undefined | null,
  r: ResolveInput,
): ResolutionPlan {
  const prior = row?.state ?? null;
  const expiredDispatch = prior === LedgerState.DISPATCHED && (row?.leaseRemainingMs ?? 0) <= 0;
  if (!row || prior === null || !(prior === LedgerState.UNKNOWN || expiredDispatch)) {
    throw new LedgerStateError(
      row
        ? `Cannot resolve "${key}": it is ${prior}${prior === LedgerState.DISPATCHED ? ' with a live lease (an executor is still working on it)' : ''}. ` +
            'Only UNKNOWN records (or DISPATCHED ones whose lease expired) are settled by hand.'
        : `Cannot resolve "${key}": no such ledger record.`,
      key,
      prior,
    );
  }
  return {
    state: r.as === 'succeeded' ? LedgerState.SUCCEEDED : LedgerState.FAILED_FINAL,
    prior,
    result: r.as === 'succeeded' ? toJsonText(r.result) : null,
    error:
      r.as === 'failed'
        ? toJsonText({ name: 'ResolvedAsFailed', message: `${r.reason} (by ${r.actor})` })
        : null,
  };
}
