/**
 * The contract of the worker's spend activities (worker/spend.ts) as the framework guards'
 * workflow code calls them (core/spend-gate.ts): types only, so workflow code can import them.
 */

/** The reservation's answer (the worker's `agentLoopGuardReserveSpend`). */
export type SpendReservation =
  | { readonly kind: 'reserved'; readonly id: string }
  /** The worker has no spend limits: nothing is reserved or settled. */
  | { readonly kind: 'none' }
  | { readonly kind: 'refused'; readonly detail: string };

/** What the spend gate asks of the worker. */
export interface SpendActivities {
  agentLoopGuardReserveSpend(input: {
    tenant: string;
    runId: string;
    model: string;
    worstUsd: number | null;
  }): Promise<SpendReservation>;
  agentLoopGuardSettleSpend(input: { id: string; actualUsd: number }): Promise<void>;
}
