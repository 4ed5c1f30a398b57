/**
 * The tenant spend limit as the `plan` activity hands it to an LLM planner for one turn
 * ({@link SpendAccess}, common/planner.ts): each model call's worst case is reserved in the
 * worker's spend store (storage/spend) before the request is sent, and settled after.
 */
import type { SpendAccess, SpendTicket } from '../../common/planner';
import { redactText } from '../../common/redact';
import { spendRefusal, unpricedRefusal } from '../../planners/call-ceiling';
import { SpendStoreUnavailableError, type SpendStore } from '../../storage/spend';
import { warn } from '../activity-context';

/**
 * The spend access of one turn of `runId` under `tenant`. A refusal throws the planner's
 * `SpendLimitError` / `UnpricedModelError` (the run stops `spend_limit`); a database failure
 * throws {@link SpendStoreUnavailableError} (the run stops `infrastructure_fault` after the
 * activity's retries). A settle that fails is only warned about: the reservation then keeps
 * counting at its worst case, which errs on the tenant's side, never the model's.
 */
export function spendAccess(store: SpendStore, tenant: string, runId: string): SpendAccess {
  const access: SpendAccess = {
    tenant,
    async reserve(worstUsd, model): Promise<SpendTicket> {
      let r;
      try {
        r = await store.reserve(tenant, runId, model, worstUsd);
      } catch (err) {
        throw new SpendStoreUnavailableError(
          `spend store unavailable: ${redactText((err as Error)?.message ?? String(err))}`,
        );
      }
      if (r.kind === 'refused')
        throw worstUsd === null ? unpricedRefusal(access, model) : spendRefusal(access, r.detail);
      const id = r.id;
      return {
        async settle(actualUsd) {
          try {
            await store.settle(id, actualUsd);
          } catch (err) {
            warn(
              `spend: could not settle reservation ${id} ($${actualUsd}); it keeps counting at its worst case: ${redactText((err as Error)?.message ?? String(err))}`,
            );
          }
        },
      };
    },
  };
  return access;
}
