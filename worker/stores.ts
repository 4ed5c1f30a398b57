/**
 * The stores every engine's worker reads besides the ledger, wired once: the operators it
 * trusts, the approvals (beside the ledger, trusting only rows those operators signed) and the
 * tenant spend store (beside the ledger when there are limits, trusting only raises those
 * operators signed). An `agentRun` worker (activities/run/context.ts) and the framework
 * guards' activities (worker/guard-activities.ts `guardActivities`, worker/ledger-writes.ts
 * `ledgerWrites`) all take them from here, so a store is verified, and its limits checked, the
 * same way on every engine. Worker code.
 */
import { ApprovalStore, approvalVerifier } from '../storage/approvals';
import type { Ledger } from '../storage/ledger';
import { OperatorRegistry } from '../operators/registry';
import {
  checkSpendLimits,
  raiseVerifier,
  spendLimitsFromEnv,
  SpendStore,
  type SpendLimits,
} from '../storage/spend';

/** What a worker may give instead of the defaults. */
export interface WorkerStoreOptions {
  /** The operators this worker trusts; default `AGENT_OPERATORS_FILE`, else open mode. */
  readonly operators?: OperatorRegistry;
  /** Where approvals live; default beside the ledger (none when the ledger is not SQL); null: none. */
  readonly approvals?: ApprovalStore | null;
  /**
   * Tenant spend limits; default `AGENT_SPEND_LIMITS`. Malformed limits, from either, refuse
   * the worker when it is built, naming the field. Null: no spend limits.
   */
  readonly spendLimits?: SpendLimits | null;
  /** The spend store; default beside the ledger when there are limits; null: none. */
  readonly spend?: SpendStore | null;
}

/** The wired stores. */
export interface WorkerStores {
  readonly operators: OperatorRegistry;
  /** Verified by {@link operators} (in open mode too: every row then verifies as stored). */
  readonly approvals: ApprovalStore | null;
  /** Its raises verified by {@link operators} (in open mode too); null: no spend limits. */
  readonly spend: SpendStore | null;
}

/**
 * The stores of a worker over `ledger`.
 * @throws {SpendLimitsInvalidError} when `spendLimits` (or `AGENT_SPEND_LIMITS`) is malformed
 */
export function workerStores(ledger: Ledger, o: WorkerStoreOptions = {}): WorkerStores {
  const operators = o.operators ?? OperatorRegistry.fromEnv();
  // Every use of an approval (a write, a resume, an audit) trusts only rows whose signature
  // verifies against this worker's operators (open mode: every row, as stored).
  const approvals =
    (o.approvals !== undefined ? o.approvals : approvalStoreBeside(ledger))?.verifiedBy(
      approvalVerifier(operators),
    ) ?? null;
  const limits =
    o.spendLimits !== undefined
      ? o.spendLimits && checkSpendLimits(o.spendLimits, 'spendLimits')
      : spendLimitsFromEnv();
  const store = o.spend !== undefined ? o.spend : limits ? SpendStore.over(ledger, limits) : null;
  const spend = store?.verifiedBy(raiseVerifier(operators)) ?? null;
  return { operators, approvals, spend };
}

/** The approval store in the ledger's database, or null when the ledger has none to share. */
function approvalStoreBeside(ledger: Ledger): ApprovalStore | null {
  try {
    return ApprovalStore.over(ledger);
  } catch {
    return null;
  }
}
