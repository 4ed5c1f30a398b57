/**
 * The prefetched turn as it crosses history in `runTool`'s completion (small step
 * payloads). A scripted plan's answer carries the call's args three times — the turn's, the
 * proposal's and the canonical form, which for most calls is the args with sorted keys — and
 * every copy is recorded on every step. The activity sends the proposal's copy once and says
 * which of the others it can be rebuilt from; the workflow rebuilds them before anything reads
 * the turn, so the guard, the trace and the StopReport see exactly what `plan` answered.
 *
 * Pure and deterministic: imported by the activity and by workflow code.
 */
import type { PlanOutput } from '../activities/types';
import { canonicalize } from '../guard/canonical';

/**
 * What a lean prefetched turn left out, as bits (a number: the marker itself crosses history
 * on every step, so it is kept to a few bytes): {@link TURN_ARGS}, {@link CANONICAL_ARGS},
 * {@link TRAILING_NULLS}.
 */
export type SharedArgs = number;

/** The turn's `args` were the proposal's `args` (sent as null). */
export const TURN_ARGS = 1;
/**
 * The proposal's `canonicalArgs` were `canonicalize(args)` (sent as null): its args needed no
 * more than the canonical form (no parsed defaults, no dropped paths), the usual case.
 */
export const CANONICAL_ARGS = 2;
/** The proposal ended with `rejection`, `ledger`, `fixture` and `approval`, all null (left out). */
export const TRAILING_NULLS = 4;

const NULL_TAIL = ['rejection', 'ledger', 'fixture', 'approval'] as const;

/** A prefetched turn as `runTool` answers it: {@link PlanOutput}, maybe with copies left out. */
export type PrefetchedTurn = PlanOutput & { readonly shared?: SharedArgs };

/**
 * The turn with what the workflow can rebuild left out and named in `shared`: the copies of the
 * proposal's args (sent as null, so that every key stays where it was) and the proposal's
 * trailing null fields. Anything else is sent as it is. {@link fullPrefetchedTurn} gives back
 * the same JSON, key order included.
 */
export function leanPrefetchedTurn(out: PlanOutput): PrefetchedTurn {
  const p = out.proposal;
  if (!p || out.turn.type !== 'call') return out;
  const args = JSON.stringify(p.args);
  if (args === undefined) return out;
  const keys = Object.keys(p);
  const tail = keys.slice(-NULL_TAIL.length);
  const nullTail =
    tail.length === NULL_TAIL.length &&
    NULL_TAIL.every((k, i) => tail[i] === k && (p as unknown as Record<string, unknown>)[k] === null);
  const shared =
    (JSON.stringify(out.turn.args) === args ? TURN_ARGS : 0) |
    (JSON.stringify(p.canonicalArgs) === JSON.stringify(canonicalize(p.args)) ? CANONICAL_ARGS : 0) |
    (nullTail ? TRAILING_NULLS : 0);
  if (shared === 0) return out;
  const proposal: Record<string, unknown> = {};
  for (const k of nullTail ? keys.slice(0, -NULL_TAIL.length) : keys) {
    proposal[k] =
      k === 'canonicalArgs' && shared & CANONICAL_ARGS ? null : (p as unknown as Record<string, unknown>)[k];
  }
  return {
    ...out,
    turn: shared & TURN_ARGS ? { ...out.turn, args: null } : out.turn,
    proposal: proposal as unknown as PlanOutput['proposal'],
    shared,
  };
}

/** The turn as the `plan` activity answered it: what `shared` names put back. */
export function fullPrefetchedTurn(lean: PrefetchedTurn): PlanOutput {
  const { shared, ...out } = lean;
  const p = out.proposal;
  if (!shared || !p || out.turn.type !== 'call') return out;
  const proposal = {
    ...p,
    ...(shared & CANONICAL_ARGS ? { canonicalArgs: canonicalize(p.args) } : {}),
    ...(shared & TRAILING_NULLS ? { rejection: null, ledger: null, fixture: null, approval: null } : {}),
  };
  return {
    ...out,
    turn: shared & TURN_ARGS ? { ...out.turn, args: p.args } : out.turn,
    proposal,
  };
}
