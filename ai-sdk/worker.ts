/**
 * `agent-loop-guard/ai-sdk/worker` (issue 34): the worker side of the AI SDK guard. `ledgerWrites`
 * wraps the user's write activities so each runs through the idempotency ledger under the
 * operation key the workflow's guard computed (ai-sdk/index.ts): at most once per key, across
 * activity retries, worker crashes and re-sent calls; a duplicate gets the stored result and
 * nothing runs. Node code (the ledger), never imported by workflow code.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { canonicalize, type Json } from '../guard';
import { executeOnce, sha256ArgsHash, type Ledger } from '../storage/ledger';
import type { GuardedWriteMeta, GuardedWriteOutput } from './types';

/** A user's write activity: the tool's input in, its result out (JSON). */
export type WriteActivity = (input: never) => Promise<unknown>;

/** Options of {@link ledgerWrites}. */
export interface LedgerWritesOptions {
  /** The ledger lease of one write (default 30 s); the activity heartbeats it while the write runs. */
  readonly leaseMs?: number;
}

/** The wrapped activities: each takes the input and the guard's {@link GuardedWriteMeta}. */
export type LedgerWriteActivities<T extends Record<string, WriteActivity>> = {
  readonly [K in keyof T]: (
    input: Parameters<T[K]>[0],
    meta: GuardedWriteMeta,
  ) => Promise<GuardedWriteOutput>;
};

/**
 * Wraps write activities with the ledger: register the result as the worker's activities (next
 * to `@temporalio/ai-sdk`'s plugin), and name each in `guardAgent`'s `writes`.
 */
export function ledgerWrites<T extends Record<string, WriteActivity>>(
  ledger: Ledger,
  writes: T,
  options: LedgerWritesOptions = {},
): LedgerWriteActivities<T> {
  const leaseMs = options.leaseMs ?? 30_000;
  const out: Record<string, (input: unknown, meta: GuardedWriteMeta) => Promise<GuardedWriteOutput>> = {};
  for (const [name, fn] of Object.entries(writes)) {
    out[name] = async (input, meta) => {
      if (!meta || typeof meta.operationKey !== 'string' || meta.operationKey === '') {
        throw ApplicationFailure.nonRetryable(
          `${name} is a guarded write: it runs only through guardAgent's tools (agent-loop-guard/ai-sdk), which give its operation key`,
          'write_without_operation_key',
        );
      }
      const info = Context.current().info;
      const outcome = await executeOnce(
        ledger,
        {
          key: meta.operationKey,
          tool: meta.tool,
          argsHash: sha256ArgsHash(meta.tool, canonicalize(input as Json)),
          runId: meta.runId,
          owner: `${info.workflowExecution?.workflowId ?? meta.runId}/${info.activityId}/attempt-${info.attempt}`,
          leaseMs,
          onCommitRetry: () => Context.current().heartbeat(),
        },
        () => (fn as (i: unknown) => Promise<unknown>)(input),
      );
      switch (outcome.kind) {
        case 'executed':
          return { via: 'executed', result: outcome.result ?? null };
        case 'cached':
          return { via: 'ledger', result: outcome.result ?? null };
        case 'in_progress':
          throw ApplicationFailure.retryable(
            `${meta.tool} ${meta.operationKey} is running elsewhere; retry in ${outcome.retryAfterMs} ms`,
            'in_progress',
          );
        case 'failed_retryable':
          throw ApplicationFailure.retryable(
            `${meta.tool} failed: ${outcome.error.message}`,
            'failed_retryable',
          );
        case 'unknown':
          throw ApplicationFailure.nonRetryable(
            `${meta.tool} ${meta.operationKey}: an earlier attempt died after dispatch; whether it happened is unknown`,
            'outcome_unknown',
          );
        case 'failed_final':
          throw ApplicationFailure.nonRetryable(`${meta.tool} failed: ${outcome.error.message}`, 'fatal');
        case 'conflict':
          throw ApplicationFailure.nonRetryable(outcome.error.message, 'idempotency_conflict');
      }
    };
  }
  return out as unknown as LedgerWriteActivities<T>;
}
