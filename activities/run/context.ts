/**
 * What every activity of a worker shares: the worker's dependencies ({@link ActivityDeps}),
 * resolved once into an {@link ActivityContext} (the defaults filled in beside the ledger,
 * approvals bound to the worker's operators, the planners looked up by kind).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ConversationAccess } from '../../common/conversation';
import type { Planner } from '../../common/planner';
import { parseApprovalPolicy, type ApprovalPolicy, type ApprovalStore } from '../../storage/approvals';
import { SqlLedger, type Ledger, type LedgerDatabase, type LedgerTx } from '../../storage/ledger';
import type { LlmProvider } from '../../planners/llm-common';
import { TraceStore } from '../../storage/trace-store';
import { ConversationStore, storeFaultsTyped } from '../../storage/conversation-store';
import { createScriptedPlanner } from '../../planners/scripted';
import type { OperatorRegistry } from '../../operators/registry';
import type { ReaperDeps } from '../reaper';
import { payloadRefBytesFromEnv, PayloadStore } from '../../storage/payloads';
import { PLAIN_ROWS, type RowCodec } from '../../storage/row-codec';
import { factOf, ObservedProgress, ToolCounters, type ProgressEvent, type ProgressSource } from '../progress';
import type { ToolRegistry } from '../../tools/registry';
import type { ToolStore } from '../../tools/store';
import { ServedUsageStore, type SpendLimits, type SpendStore } from '../../storage/spend';
import { workerStores } from '../../worker/stores';

/** What the activities need. */
export interface ActivityDeps {
  readonly registry: ToolRegistry;
  /** The SQL store the tools share through `ctx.tx` (tools/store.ts); null/absent: none. */
  readonly store?: ToolStore | null;
  readonly ledger: Ledger;
  /** True when the ledger lives in the tool store's database file (atomic business writes). */
  readonly storeSharesLedger?: boolean;
  /**
   * The worker's progress source (docs/spec.md §7.8). Default: {@link ObservedProgress} (new
   * read results and committed writes of the run, kept beside the ledger).
   */
  readonly progress?: ProgressSource;
  /** Where the runtime counts real executions of every tool; default beside the ledger. */
  readonly counters?: ToolCounters | null;
  /** Planners by kind; `scripted` is always available. */
  readonly planners?: Partial<Record<LlmProvider, Planner>>;
  /** Ledger lease; renewed while a write runs. */
  readonly leaseMs?: number;
  /** Worker identity, for the ledger's owner column. */
  readonly identity?: string;
  /** The ledger reaper's settings (activities/reaper.ts); by default it asks the worker's client. */
  readonly reaper?: Omit<ReaperDeps, 'ledger'>;
  /**
   * Where approvals live (storage/approvals). By default beside the ledger, in its
   * database; null: none (a call that needs an approval can then never run).
   */
  readonly approvals?: ApprovalStore | null;
  /** Which calls need an approval beyond the tools' own `requiresApproval`; default: `AGENT_APPROVAL_POLICY`. */
  readonly approvalPolicy?: ApprovalPolicy;
  /** The operators this worker trusts (operators); default: `AGENT_OPERATORS_FILE`, else open mode. */
  readonly operators?: OperatorRegistry;
  /** The checkpoint seal key (activities/checkpoint-seal.ts); default: `AGENT_CHECKPOINT_KEY` or a local key file. */
  readonly checkpointKey?: Buffer;
  /**
   * Where LLM planners keep their conversations (storage/conversation-store.ts).
   * By default beside the ledger, in its database; null: none (the conversation then travels
   * in the planner's memory, through workflow history, as planners once kept it all).
   */
  readonly conversations?: ConversationAccess | null;
  /**
   * Seals what the default conversation and payload stores write (storage/row-codec.ts):
   * `createAgentWorker` passes the worker's payload codec, so data moved out of history stays
   * encrypted; default plain text.
   */
  readonly rows?: RowCodec;
  /**
   * Where large tool results live (storage/payloads). By default beside the ledger, in
   * its database; null: none (a result above the payload limit then stops the run).
   */
  readonly payloads?: PayloadStore | null;
  /** Results whose data JSON is above this many bytes go by reference; default `AGENT_PAYLOAD_REF_BYTES` (64 KB). */
  readonly payloadRefBytes?: number;
  /**
   * Tenant spend limits (storage/spend, docs/spec.md §7.10); default `AGENT_SPEND_LIMITS`
   * (malformed: the worker refuses to start). With limits, every model call is reserved in
   * the spend store beside the ledger first; null or absent env: no spend limits.
   */
  readonly spendLimits?: SpendLimits | null;
  /** The spend store (default: beside the ledger when there are limits); null: none. */
  readonly spend?: SpendStore | null;
}

/**
 * A call's bookkeeping — the runtime's tool counter and the default progress source's fact —
 * when it lives in the ledger's database (the defaults): a write's ledger commit then carries
 * it, and a read's counter and fact are one unit of work, instead of a transaction each.
 */
export interface CallBookkeeping {
  /** The tool counters are in the ledger's database. */
  readonly counts: boolean;
  /** The progress source's facts are in the ledger's database. */
  readonly observes: boolean;
  /**
   * Writes in `tx` what lives there: the count (when `count`) and `e`'s fact. Answers the run's
   * progress version as of `tx` when it learned it (the fact was written: `observes`), else null.
   */
  write(tx: LedgerTx, e: ProgressEvent, count: boolean): Promise<number | null>;
  /** {@link write} as its own unit of work (nothing, and null, when there is nothing to write). */
  alone(e: ProgressEvent, count: boolean): Promise<number | null>;
}

/** The worker's dependencies, resolved once and shared by every activity. */
export interface ActivityContext {
  readonly registry: ToolRegistry;
  readonly ledger: Ledger;
  readonly storeSharesLedger: boolean;
  readonly store: ToolStore | null;
  readonly progress: ProgressSource;
  readonly counters: ToolCounters | null;
  /** The counter and progress fact that can join the ledger's transaction; null: neither can. */
  readonly bookkeeping: CallBookkeeping | null;
  readonly leaseMs: number;
  readonly identity: string;
  readonly operators: OperatorRegistry;
  /** Trusts only rows whose signature verifies against {@link operators}. */
  readonly approvals: ApprovalStore | null;
  readonly approvalPolicy: ApprovalPolicy;
  /** Its database failures typed (a `ConversationStoreFault`). */
  readonly conversations: ConversationAccess | null;
  readonly payloads: PayloadStore | null;
  readonly payloadRefBytes: number;
  /** Where trace records that left a long run's checkpoint are kept; null: nowhere. */
  readonly traces: TraceStore | null;
  /** Tenant spend limits' store, trusting only raises the worker's operators signed; null: no limits. */
  readonly spend: SpendStore | null;
  /** Every model request of a run, recorded outside the plan attempt; null: no SQL ledger. */
  readonly served: ServedUsageStore | null;
  /** The planner of a kind; a kind this worker does not have fails non-retryable `PlannerNotConfigured`. */
  plannerFor(kind: string): Planner;
}

/** Resolves the worker's dependencies, filling in each default. */
export function createActivityContext(deps: ActivityDeps): ActivityContext {
  const { registry, ledger } = deps;
  const store = deps.store ?? null;
  const progress: ProgressSource = deps.progress ?? observedBeside(ledger);
  const counters = deps.counters !== undefined ? deps.counters : countersBeside(ledger);
  const leaseMs = deps.leaseMs ?? 30_000;
  const identity = deps.identity ?? `worker-${process.pid}`;
  const scripted = createScriptedPlanner();
  // The operators, the approvals and the spend store, wired as on every engine's worker
  // (malformed spend limits fail the worker at start, naming the field).
  const { operators, approvals, spend } = workerStores(ledger, {
    ...(deps.operators ? { operators: deps.operators } : {}),
    ...(deps.approvals !== undefined ? { approvals: deps.approvals } : {}),
    ...(deps.spendLimits !== undefined ? { spendLimits: deps.spendLimits } : {}),
    ...(deps.spend !== undefined ? { spend: deps.spend } : {}),
  });
  // LLM planners keep their conversation here, not in workflow history.
  const rows = deps.rows ?? PLAIN_ROWS;
  const conversationStore =
    deps.conversations !== undefined ? deps.conversations : ConversationStore.over(ledger, rows);
  // Its database failures typed, so the plan activity tells an outage from a planner failure.
  const conversations = conversationStore ? storeFaultsTyped(conversationStore) : null;
  // A bad policy fails the worker at start, naming the variable, instead of at the first call.
  const approvalPolicy = deps.approvalPolicy ?? parseApprovalPolicy(process.env.AGENT_APPROVAL_POLICY);
  // Large results go to the payload store; the workflow gets a reference.
  const payloads = deps.payloads !== undefined ? deps.payloads : payloadStoreBeside(ledger, rows);
  const payloadRefBytes = deps.payloadRefBytes ?? payloadRefBytesFromEnv();
  // The paged-out trace of long runs, sealed like the conversation.
  const traces = TraceStore.over(ledger, rows);

  function plannerFor(kind: string): Planner {
    if (kind === 'scripted') return scripted;
    const p = deps.planners?.[kind as LlmProvider];
    if (!p) {
      throw ApplicationFailure.nonRetryable(
        `planner "${kind}" is not configured on this worker`,
        'PlannerNotConfigured',
      );
    }
    return p;
  }

  // Only the defaults are known to live in the ledger's database.
  const bookkeeping = callBookkeeping(
    ledger,
    deps.counters === undefined && counters instanceof ToolCounters ? counters : null,
    deps.progress === undefined && progress instanceof ObservedProgress ? progress : null,
  );

  return {
    registry,
    ledger,
    storeSharesLedger: deps.storeSharesLedger === true,
    store,
    progress,
    counters,
    bookkeeping,
    leaseMs,
    identity,
    operators,
    approvals,
    approvalPolicy,
    conversations,
    payloads,
    payloadRefBytes,
    traces,
    spend,
    served: ServedUsageStore.over(ledger),
    plannerFor,
  };
}

/** The {@link CallBookkeeping} of counters and facts in `ledger`'s database; null without either. */
function callBookkeeping(
  ledger: Ledger,
  counters: ToolCounters | null,
  observed: ObservedProgress | null,
): CallBookkeeping | null {
  if (!(ledger instanceof SqlLedger) || (!counters && !observed)) return null;
  const db: LedgerDatabase = ledger.database();
  const needed = (e: ProgressEvent, count: boolean): boolean =>
    (count && counters !== null) || (observed !== null && factOf(e) !== null);
  const write = async (tx: LedgerTx, e: ProgressEvent, count: boolean): Promise<number | null> => {
    if (count && counters) await counters.countIn(tx, e.runId, e.tool);
    return observed ? observed.observeIn(tx, e) : null;
  };
  return {
    counts: counters !== null,
    observes: observed !== null,
    write,
    async alone(e, count) {
      // One transaction (a new fact and the version it bumps go together, on PostgreSQL too).
      // A read's counter and fact guarantee nothing by themselves: committed, not flushed on
      // their own (SqlDurability `unflushed`); a write's are flushed as its ledger's are.
      if (!needed(e, count)) return null;
      return db.unit('transaction', (tx) => write(tx, e, count), e.effect === 'read' ? 'unflushed' : 'full');
    },
  };
}

/** The payload store in the ledger's database, or null when the ledger has none to share. */
function payloadStoreBeside(ledger: Ledger, rows: RowCodec): PayloadStore | null {
  try {
    return PayloadStore.over(ledger, rows);
  } catch {
    return null;
  }
}

/** The default progress source in the ledger's database, or an in-memory one without a SQL ledger. */
function observedBeside(ledger: Ledger): ProgressSource {
  return ledger instanceof SqlLedger ? new ObservedProgress(ledger.database()) : memoryObserved();
}

/** The runtime's tool counters in the ledger's database, or null without a SQL ledger. */
function countersBeside(ledger: Ledger): ToolCounters | null {
  return ledger instanceof SqlLedger ? new ToolCounters(ledger.database()) : null;
}

/** The observed-facts source kept in memory (a worker on a non-SQL ledger: tests, benchmarks). */
function memoryObserved(): ProgressSource {
  const facts = new Map<string, Set<string>>();
  return {
    name: 'observed (in memory)',
    async observe(e) {
      const f = factOf(e);
      if (f === null) return;
      const set = facts.get(e.runId) ?? new Set<string>();
      set.add(f);
      facts.set(e.runId, set);
    },
    async version(runId) {
      return facts.get(runId)?.size ?? 0;
    },
  };
}
