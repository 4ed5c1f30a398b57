/**
 * The approval store as the client reaches it: where it lives (an open ledger, or one opened
 * from LEDGER_URL and closed after) and whom the workers trust (their operators, so a stored
 * approval a worker would refuse is audited `refused`). Apart from the decisions
 * (client/approvals.ts) because it is the client's only path into storage/: the store and the
 * ledger drivers load here, lazily, so `agent-loop-guard/client` stays light, and their errors
 * become CliErrors here (bad input exit 2, a ledger failure exit 1).
 */
import { ApprovalError } from '../storage/approvals/errors';
import type { ApprovalStore } from '../storage/approvals/approval-store';
import { approvalVerifier } from '../storage/approvals/verify';
import { LedgerError } from '../storage/ledger/errors';
import type { Ledger } from '../storage/ledger/types';
import { OperatorRegistry } from '../operators/registry';
import { CliError, Exit } from './format';

/**
 * Where the approval store lives and whom the workers trust. Every default comes from `env`
 * (default `process.env`), as agentctl's do.
 */
export interface ApprovalStoreOptions {
  /** An open SQL ledger to store in (it is not closed here); default: open `ledgerUrl`. */
  readonly ledger?: Ledger;
  /** The ledger's database, `sqlite:PATH` or `postgres://…` (default LEDGER_URL, else `sqlite:data/agent.db`). */
  readonly ledgerUrl?: string;
  /**
   * The workers' operators (default AGENT_OPERATORS_FILE, else open mode): with them an
   * approval a worker would not trust is audited `refused` when stored and reported untrusted.
   */
  readonly operators?: OperatorRegistry;
  /** Where the defaults are read (LEDGER_URL, AGENT_OPERATORS_FILE, AGENT_OPERATOR_KEY_FILE, AGENTCTL_ACTOR/USER). */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Runs `fn` on the approval store in the given ledger, or in one opened from its URL (and
 * closed after). With the workers' operators the store can tell which approvals a worker
 * will trust, so one it would refuse is audited `refused`, not `approved`. A bad operators
 * file or store input is exit 2, a ledger failure exit 1.
 */
export async function withStore<T>(
  o: ApprovalStoreOptions,
  fn: (store: ApprovalStore) => Promise<T>,
): Promise<T> {
  const env = o.env ?? process.env;
  let operators: OperatorRegistry;
  try {
    operators = o.operators ?? OperatorRegistry.fromEnv(env);
  } catch (err) {
    throw new CliError(Exit.USAGE, (err as Error).message, { cause: err });
  }
  let opened: Ledger | undefined;
  try {
    const { ApprovalStore } = await import('../storage/approvals/approval-store');
    let ledger = o.ledger;
    if (!ledger) {
      const { ledgerUrlFromEnv, openLedger } = await import('../storage/ledger/open-ledger');
      ledger = opened = await openLedger(o.ledgerUrl ?? ledgerUrlFromEnv(env));
    }
    const store = ApprovalStore.over(ledger);
    return await fn(operators.isOpen ? store : store.verifiedBy(approvalVerifier(operators)));
  } catch (err) {
    if (err instanceof ApprovalError) throw new CliError(Exit.USAGE, err.message, { cause: err });
    if (err instanceof LedgerError) throw new CliError(Exit.ERROR, err.message, { cause: err });
    throw err;
  } finally {
    await opened?.close().catch(() => undefined);
  }
}
