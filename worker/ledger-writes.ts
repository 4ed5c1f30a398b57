/**
 * `ledgerWrites` (exported by `agent-loop-guard/ai-sdk/worker` and `/openai-agents/worker`): it
 * wraps the user's write activities so each runs through the idempotency ledger under the
 * operation key the workflow's guard computed (core/framework-guard.ts): at most once per key, across
 * activity retries, worker crashes and re-sent calls; a duplicate gets the stored result and
 * nothing runs. A write that can be probed (`reconcile`) or that forwards its key to an
 * idempotent vendor (`vendorIdempotent`) is settled after a worker died mid-write by the same
 * ledger function as an `agentRun` tool's (storage/ledger `executeOnce`), without a person.
 * Node code (the ledger), never imported by workflow code.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { OperatorRegistry } from '../operators/registry';
import type { ApprovalStore } from '../storage/approvals/approval-store';
import { canonicalize, normalizeCall, type ToolResult } from '../guard';
import { executeOnce, sha256ArgsHash, type Ledger, type ReconcileAnswer } from '../storage/ledger';
import { assertLeaseMs } from '../storage/ledger/claim-decision';
import { asActivityFailure, ledgerResult, useApproval } from './guarded-write';
import { workerStores } from './stores';
import type { GuardedWriteMeta, GuardedWriteOutput } from '../core/framework-types';
import { callDigest } from './guard-activities';

/** What a write is given besides its input: forward `operationKey` to a vendor that dedupes on it. */
export interface WriteContext {
  /** The guard's operation key of this call. */
  readonly operationKey: string;
  /** True when an earlier executor died after dispatch and this is a `vendorIdempotent` re-run. */
  readonly reExecution: boolean;
  /** Aborted when the ledger lease is lost (another executor owns the key now): stop before writing. */
  readonly signal: AbortSignal;
}

/** A user's write activity: the tool's input in, its result out (JSON). */
export type WriteActivity = (input: never, ctx: WriteContext) => Promise<unknown>;

/**
 * A write with what the ledger may do after its executor died mid-write — the options an
 * `agentRun` tool declares (tools/define-tool.ts), passed to the same `executeOnce`.
 */
export interface WriteDefinition<F extends WriteActivity = WriteActivity> {
  /** Performs the write. */
  readonly execute: F;
  /**
   * Asks the outside world what became of the operation `key` after an executor died after
   * dispatch: `succeeded` (with its result) settles it without running again, `not_found` runs it,
   * `failed` stores the failure, `unknown` leaves it to a person (`outcome_unknown`).
   */
  readonly reconcile?: (key: string) => Promise<ReconcileAnswer>;
  /** The write forwards `ctx.operationKey` to a vendor that dedupes on it: re-running it is safe. */
  readonly vendorIdempotent?: boolean;
}

/** What `ledgerWrites` accepts per activity name: the function, or it with its ledger options. */
export type WriteEntry = WriteActivity | WriteDefinition;

type ActivityOf<E> = E extends WriteDefinition<infer F> ? F : E extends WriteActivity ? E : never;

/** Options of {@link ledgerWrites}. */
export interface LedgerWritesOptions {
  /** The ledger lease of one write (default 30 s); the activity heartbeats it while the write runs. */
  readonly leaseMs?: number;
  /**
   * Whose signed approvals a `requiresApproval` write accepts (default AGENT_OPERATORS_FILE,
   * else open mode: any stored approval). Give the same registry as to `guardActivities`.
   */
  readonly operators?: OperatorRegistry;
}

/** The wrapped activities: each takes the input and the guard's {@link GuardedWriteMeta}. */
export type LedgerWriteActivities<T extends Record<string, WriteEntry>> = {
  readonly [K in keyof T]: (
    input: Parameters<ActivityOf<T[K]>>[0],
    meta: GuardedWriteMeta,
  ) => Promise<GuardedWriteOutput>;
};

/** The mark of an activity `ledgerWrites` returned (so wrapping it again is refused). */
export const LEDGER_WRAPPED = Symbol.for('agent-loop-guard.ai-sdk.ledger-write');

/** Whether `fn` is an activity {@link ledgerWrites} returned. */
export function isLedgerWrite(fn: unknown): boolean {
  return typeof fn === 'function' && (fn as unknown as Record<symbol, unknown>)[LEDGER_WRAPPED] === true;
}

/** How often a running write heartbeats its activity (the SDK throttles to the heartbeat timeout). */
const HEARTBEAT_MS = 1_000;

/**
 * Wraps write activities with the ledger: register the result as the worker's activities (or
 * give them to {@link AgentLoopGuardPlugin}'s `aiSdk.writes`, which calls this), and name each in
 * `guardAgent`'s `writes`. An entry is the function, or `{ execute, reconcile?, vendorIdempotent? }`.
 *
 * @throws {TypeError} naming the activity when an entry is already wrapped (by `ledgerWrites`,
 *   directly or through the plugin): a write is wrapped once, or its inner copy would run unkeyed
 * @throws {TypeError} when `leaseMs` is not a positive number of milliseconds (before any write)
 */
export function ledgerWrites<T extends Record<string, WriteEntry>>(
  ledger: Ledger,
  writes: T,
  options: LedgerWritesOptions = {},
): LedgerWriteActivities<T> {
  const leaseMs = options.leaseMs ?? 30_000;
  try {
    assertLeaseMs(leaseMs);
  } catch (err) {
    throw new TypeError(`leaseMs: ${(err as Error).message}`);
  }
  // The approvals as every engine's worker wires them (worker/stores.ts); spend is not a write's.
  let approvals: ApprovalStore | null | undefined;
  const approvalsOf = () =>
    approvals !== undefined
      ? approvals
      : (approvals = workerStores(ledger, {
          ...(options.operators ? { operators: options.operators } : {}),
          spendLimits: null,
        }).approvals);
  const out: Record<string, (input: unknown, meta: GuardedWriteMeta) => Promise<GuardedWriteOutput>> = {};
  for (const [name, entry] of Object.entries(writes)) {
    const def = definitionOf(name, entry);
    const fn = def.execute as unknown as (input: unknown, ctx: WriteContext) => Promise<unknown>;
    const wrapped = async (input: unknown, meta: GuardedWriteMeta): Promise<GuardedWriteOutput> => {
      if (!meta || typeof meta.operationKey !== 'string' || meta.operationKey === '') {
        throw ApplicationFailure.nonRetryable(
          `${name} is a guarded write: it runs only through guardAgent's tools (agent-loop-guard/ai-sdk), which give its operation key`,
          'write_without_operation_key',
        );
      }
      const info = Context.current().info;
      // The approval is used up as an agentRun tool's is (worker/guarded-write.ts): a missing
      // one is audited, the retry rule is the same. It binds the exact call the person saw (its
      // digest over the input as sent, as the workflow asked the worker for it).
      const refused = await useApproval(meta.requiresApproval || meta.approval ? approvalsOf() : null, {
        tool: meta.tool,
        runId: meta.runId,
        required: meta.requiresApproval === true,
        approvalId: meta.approval?.approvalId ?? null,
        stopRef: meta.approval?.stopRef ?? null,
        call: () => ({
          fingerprint:
            meta.approval?.fingerprint ?? normalizeCall(meta.tool, meta.canonicalArgs ?? input).fingerprint,
          argsHash: callDigest(meta.tool, input),
        }),
        activityId: info.activityId,
        attempt: info.attempt,
      });
      if (refused) throw asActivityFailure(refused as Exclude<ToolResult, { kind: 'SUCCESS' }>);
      const argsHash = ledgerArgsHash(meta, input);
      // The activity heartbeats while the write runs, so a `heartbeatTimeout` finds a dead
      // worker early; the ledger's own lease is renewed by executeOnce.
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_MS);
      beat.unref();
      let outcome;
      let failure: ToolResult | null = null;
      try {
        outcome = await executeOnce(
          ledger,
          {
            key: meta.operationKey,
            tool: meta.tool,
            argsHash,
            runId: meta.runId,
            owner: `${info.workflowExecution?.workflowId ?? meta.runId}/${info.activityId}/attempt-${info.attempt}`,
            leaseMs,
            // What decides the expired-dispatch rule, as for an agentRun tool (run-tool-activity.ts).
            vendorIdempotent: def.vendorIdempotent ?? false,
            ...(def.reconcile ? { reconcile: def.reconcile } : {}),
            onCommitRetry: () => ctx.heartbeat(),
          },
          async (se) => {
            try {
              return await fn(input, {
                operationKey: se.key,
                reExecution: se.reExecution,
                signal: se.signal,
              });
            } catch (err) {
              // The user's activity threw and the ledger released the key: Temporal's retry
              // policy runs it again, as it would the unwrapped activity.
              failure = { kind: 'RETRYABLE', message: `${meta.tool} failed: ${errorText(err)}` };
              throw err;
            }
          },
        );
      } finally {
        clearInterval(beat);
      }
      // One mapping of the ledger's answer for every engine (worker/guarded-write.ts).
      const mapped = ledgerResult(outcome, null, failure);
      if (mapped.result.kind === 'SUCCESS')
        return {
          via: mapped.via === 'not_run' ? 'executed' : mapped.via,
          result: mapped.result.data ?? null,
        };
      throw asActivityFailure(mapped.result, mapped.holder);
    };
    Object.defineProperty(wrapped, LEDGER_WRAPPED, { value: true });
    out[name] = wrapped;
  }
  return out as unknown as LedgerWriteActivities<T>;
}

/**
 * The ledger's args hash of a guarded write: SHA-256 of the canonical args the workflow's guard
 * fingerprinted (`meta.canonicalArgs`: the tool's `args` rules applied, non-semantic paths
 * dropped), the form an `agentRun` tool's hash takes (tools/registry.ts). So a retried write
 * that differs only in an ignored field (a model-made request id) is answered from the ledger,
 * and one that differs in anything else under the same key is an `idempotency_conflict`.
 * Without `canonicalArgs` (a tool without rules) the input is normalised here, the same form.
 */
function ledgerArgsHash(meta: GuardedWriteMeta, input: unknown): string {
  const canonical =
    meta.canonicalArgs !== undefined
      ? canonicalize(meta.canonicalArgs)
      : normalizeCall(meta.tool, input).canonicalArgs;
  return sha256ArgsHash(meta.tool, canonical);
}

/** An entry of `ledgerWrites` as a definition; see its `@throws`. */
function definitionOf(name: string, entry: WriteEntry): WriteDefinition {
  const def: WriteDefinition = typeof entry === 'function' ? { execute: entry } : entry;
  if (def === null || typeof def !== 'object' || typeof def.execute !== 'function')
    throw new TypeError(
      `ledgerWrites: ${name} must be a function or { execute, reconcile?, vendorIdempotent? }, not ${JSON.stringify(entry)}`,
    );
  if (isLedgerWrite(def.execute))
    throw new TypeError(
      `ledgerWrites: ${name} is already wrapped by ledgerWrites (or by AgentLoopGuardPlugin's aiSdk.writes): wrap each write once — the inner copy would get no operation key and nothing would run`,
    );
  if (def.reconcile !== undefined && typeof def.reconcile !== 'function')
    throw new TypeError(
      `ledgerWrites: ${name}.reconcile must be a function (key) => Promise<ReconcileAnswer>`,
    );
  if (def.vendorIdempotent !== undefined && typeof def.vendorIdempotent !== 'boolean')
    throw new TypeError(`ledgerWrites: ${name}.vendorIdempotent must be a boolean`);
  return def;
}

/** The message of what a write threw. */
function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
