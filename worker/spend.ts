/**
 * The worker's half of the tenant spend limit, once for every engine: a model call's worst
 * case is reserved in the spend store (storage/spend) before the request is sent, and the
 * reservation settled after it. An `agentRun` planner reaches it through the {@link SpendAccess}
 * its `plan` activity hands it ({@link spendAccess}); the AI SDK and OpenAI Agents guards
 * through the worker's spend activities ({@link spendActivities}). What a call costs — its
 * worst case, its priced usage, the worst case again when the provider reported none — is
 * priced by common/price.ts on the side that knows the call. Worker code.
 */
import type { SpendAccess, SpendTicket } from '../common/planner';
import { redactText } from '../common/redact';
import { spendRefusal, unpricedRefusal } from '../planners/call-ceiling';
import { SpendStoreUnavailableError, type SpendStore } from '../storage/spend';
import { warn } from '../activities/activity-context';
import type { SpendActivities, SpendReservation } from './spend-types';

export type { SpendActivities, SpendReservation } from './spend-types';

/** Reserves `worstUsd`; a database failure is a {@link SpendStoreUnavailableError}. */
async function reserveIn(
  store: SpendStore,
  tenant: string,
  runId: string,
  model: string,
  worstUsd: number | null,
) {
  try {
    return await store.reserve(tenant, runId, model, worstUsd);
  } catch (err) {
    throw new SpendStoreUnavailableError(
      `spend store unavailable: ${redactText((err as Error)?.message ?? String(err))}`,
    );
  }
}

/**
 * Settles reservation `id` at `actualUsd`. A settle that fails is only warned about: the
 * reservation then keeps counting at its worst case, which errs on the tenant's side, never
 * the model's.
 */
async function settleIn(store: SpendStore, id: string, actualUsd: number): Promise<void> {
  try {
    await store.settle(id, actualUsd);
  } catch (err) {
    warn(
      `spend: could not settle reservation ${id} ($${actualUsd}); it keeps counting at its worst case: ${redactText((err as Error)?.message ?? String(err))}`,
    );
  }
}

/**
 * The spend access of one turn of `runId` under `tenant`. A refusal throws the planner's
 * `SpendLimitError` / `UnpricedModelError` (the run stops `spend_limit`); a database failure
 * throws {@link SpendStoreUnavailableError} (the run stops `infrastructure_fault` after the
 * activity's retries).
 */
export function spendAccess(store: SpendStore, tenant: string, runId: string): SpendAccess {
  const access: SpendAccess = {
    tenant,
    async reserve(worstUsd, model): Promise<SpendTicket> {
      const r = await reserveIn(store, tenant, runId, model, worstUsd);
      if (r.kind === 'refused')
        throw worstUsd === null ? unpricedRefusal(access, model) : spendRefusal(access, r.detail);
      const id = r.id;
      return { settle: (actualUsd) => settleIn(store, id, actualUsd) };
    },
  };
  return access;
}

/**
 * The spend activities of the framework guards (core/spend-gate.ts `SpendGate`) over `store`
 * (null: the worker has no spend limits, nothing is reserved). A refusal is answered, not
 * thrown: the workflow stops the run `spend_limit` itself.
 */
export function spendActivities(store: SpendStore | null): SpendActivities {
  return {
    async agentLoopGuardReserveSpend(i): Promise<SpendReservation> {
      if (!store) return { kind: 'none' };
      const r = await reserveIn(store, i.tenant, i.runId, i.model, i.worstUsd);
      return r.kind === 'reserved' ? { kind: 'reserved', id: r.id } : { kind: 'refused', detail: r.detail };
    },
    async agentLoopGuardSettleSpend(i): Promise<void> {
      if (store) await settleIn(store, i.id, i.actualUsd);
    },
  };
}
