/**
 * What an `idempotency_conflict` StopReport says (docs/spec.md §4): the operation key,
 * the run that holds it and its tool, and which args of the holding call and of the refused call
 * differ — redacted as the trace is (the trace's own redacted args, and the proposal's redacted
 * the same way). The holder comes from the ledger (the plan activity's view of a SUCCEEDED
 * record, or the ledger's refusal in the tool activity); without one, from this run's trace.
 * The holding call's args are known only when it is this run's and still in its kept trace;
 * another run's are not (the ledger keeps only their hash): then `differing_args` is null.
 * Workflow code: deterministic, pure.
 */
import { isPayloadRef } from '../common/payload-limits';
import { redact } from '../common/redact';
import { argsDiff, GuardReason, type TraceRecord } from '../guard';
import type { ProposalInfo } from '../activities/types';
import type { RunState } from './run-state';

/** The run holding a key and its tool, as the ledger names them. */
export type KeyHolder = { readonly runId: string | null; readonly tool: string } | null | undefined;

/** The newest kept trace record of another call under `key` (its args, its tool), if any. */
function heldCall(run: RunState, key: string, fingerprint: string): TraceRecord | null {
  const records = run.trace.newest(run.trace.total);
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i]!;
    if (r.operation_key === key && r.fingerprint !== fingerprint && r.args !== null) return r;
  }
  return null;
}

/** Adds `conflict` to the StopReport in force when it is an `idempotency_conflict` over `p`'s key. */
export function noteConflict(run: RunState, p: ProposalInfo, holder: KeyHolder): void {
  const stop = run.stopInForce;
  const key = p.operationKey;
  if (!stop || stop.reason !== GuardReason.IDEMPOTENCY_CONFLICT || !key) return;
  const earlier = heldCall(run, key, p.fingerprint);
  const holderRun = holder ? holder.runId : earlier ? run.runId : null;
  const held = holderRun === run.runId && earlier ? earlier.args : null;
  const proposed = redact(p.canonicalArgs);
  const known = held !== null && !isPayloadRef(held) && !isPayloadRef(proposed);
  stop.report = {
    ...stop.report,
    conflict: {
      operation_key: key,
      holder_run: holderRun,
      holder_tool: holder?.tool ?? earlier?.tool ?? null,
      differing_args: known ? argsDiff(held, proposed) : null,
    },
  };
}
