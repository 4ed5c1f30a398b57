/**
 * The `runTool` activity: runs one tool call. Reads run directly; writes run through the
 * ledger (at most once per operation key); a call that needs an approval uses it up first.
 */
import {
  guardOutputSize,
  isPayloadRef,
  jsonBytes,
  MAX_PAYLOAD_BYTES,
  payloadTooLarge,
} from '../../common/payload-limits';
import { leanPrefetchedTurn } from '../../common/prefetched-turn';
import { redactText } from '../../common/redact';
import { NEEDS_HUMAN_CODES, ResultCode, type ToolResult } from '../../guard';
import { activityExecution, heartbeat } from '../activity-context';
import { approvalRequired } from '../../storage/approvals';
import { ledgerResult, useApproval } from '../../worker/guarded-write';
import {
  executeOnce,
  executeOnceAtomic,
  SideEffectErrorClass,
  type ExecuteOutcome,
  type LedgerTx,
} from '../../storage/ledger';
import { offloadLarge, resolvePayloadRefs } from '../../storage/payloads';
import type { ProgressEvent } from '../progress';
import { classifyError } from '../../tools/classify';
import type { AnyTool } from '../../tools/define-tool';
import { inStore } from '../../tools/store';
import { undeclaredToModel } from '../../tools/tool-errors';
import type { Tx } from '../../tools/tx';
import type { PlanInput, PlanOutput, RunToolInput, RunToolOutput } from '../types';
import type { ActivityContext } from './context';
import { afterCall, counted, execute, runRead, TERMINAL_MARK, unwrapTerminal, versionNow } from './tool-call';

/** A tool's non-success result, thrown so the ledger does not commit it as SUCCEEDED. */
class ResultNotSuccess extends Error {
  /** A FATAL answer's code, stored by the ledger so the first run and every duplicate stop with it. */
  readonly code: string | undefined;
  constructor(readonly result: ToolResult) {
    super(result.kind !== 'SUCCESS' && result.message ? result.message : `tool returned ${result.kind}`);
    this.name = 'ResultNotSuccess';
    this.code = result.kind === 'FATAL' ? (result.code ?? ResultCode.FATAL) : undefined;
  }
}

/** How the ledger settles a write whose tool *answered* with `result` (it did not throw). */
function ledgerClass(result: ToolResult): SideEffectErrorClass {
  // A tool that answered PRECONDITION/RETRYABLE/PENDING or refused (permission, policy, a
  // person's approval) did not perform the operation: release the claim so the operation
  // can run once the world changes. Any other FATAL answer is the operation's final word.
  if (result.kind !== 'FATAL') return SideEffectErrorClass.NOT_PERFORMED;
  return NEEDS_HUMAN_CODES.has(result.code ?? ResultCode.FATAL)
    ? SideEffectErrorClass.NOT_PERFORMED
    : SideEffectErrorClass.FINAL;
}

/** How the ledger settles a write whose side effect *threw*, classified as `result`. */
function thrownLedgerClass(result: ToolResult, inWorldTransaction: boolean): SideEffectErrorClass {
  // The world database was busy or down: a tool whose whole effect is in the world
  // transaction rolled back with it, so nothing happened and the claim is released.
  if (inWorldTransaction && result.kind === 'RETRYABLE' && result.code === 'database_unavailable')
    return SideEffectErrorClass.NOT_PERFORMED;
  // A transient failure thrown mid-write (a timeout, a reset connection) may have happened
  // on the other side: the ledger must not assume either way.
  if (result.kind === 'RETRYABLE') return SideEffectErrorClass.UNKNOWN_OUTCOME;
  return ledgerClass(result);
}

/** The `runTool` activity over the worker's context. */
export function createRunToolActivity(
  ctx: ActivityContext,
  prefetchPlan: (input: PlanInput) => Promise<PlanOutput | null> = async () => null,
) {
  const { registry, ledger, identity, leaseMs, approvals, approvalPolicy, payloads, payloadRefBytes } = ctx;

  /**
   * Uses up the call's approval before the tool runs (worker/guarded-write.ts, as every
   * engine's write): bound to the run and to the fingerprint of the args that will run —
   * recomputed here, never taken from the caller.
   */
  function approvalOf(tool: AnyTool, input: RunToolInput, args: unknown): Promise<ToolResult | null> {
    const { attempt, activityId } = activityExecution();
    return useApproval(approvals, {
      tool: tool.name,
      runId: input.runId,
      required: approvalRequired(tool, args, approvalPolicy),
      approvalId: input.approvalId ?? null,
      stopRef: input.approvalStopRef ?? null,
      call: () => {
        const n = registry.normalize(tool.name, args, input.operationKey);
        return {
          fingerprint: input.approvalId ? n.fingerprint : (input.fingerprint ?? n.fingerprint),
          argsHash: n.argsHash,
        };
      },
      activityId,
      attempt,
    });
  }

  /** The ledger's answer as the call's result (worker/guarded-write.ts); a terminal result keeps its flag. */
  function mapOutcome(
    outcome: ExecuteOutcome<unknown>,
    executed: ToolResult | null,
    failure: ToolResult | null,
  ): { result: ToolResult; via: RunToolOutput['via']; holder?: RunToolOutput['holder'] } {
    return ledgerResult(outcome, executed, failure, (raw) => {
      const stored = unwrapTerminal(raw);
      return stored.terminal
        ? { kind: 'SUCCESS', data: stored.data, terminal: true }
        : { kind: 'SUCCESS', data: stored.data };
    });
  }

  /**
   * Runs one tool call ({@link runOne}); with `prefetch`, also plans the scripted run's next
   * turn and hands it back as `next` when the two fit in one payload.
   */
  async function runTool(raw: RunToolInput): Promise<RunToolOutput> {
    const { prefetch, ...call } = raw;
    const out = await runOne(call);
    if (!prefetch) return out;
    // The scripted run's next turn, planned now that the tool has answered; what
    // every prefetched turn has in common did not cross history (PrefetchInput).
    const next = await prefetchPlan({
      runId: call.runId,
      goal: '',
      memory: { next: 0 },
      observation: null,
      ...prefetch,
    });
    if (!next) return out;
    // The args once, not three times: the workflow puts the copies back.
    const both = { ...out, next: leanPrefetchedTurn(next) };
    return jsonBytes(both) <= MAX_PAYLOAD_BYTES ? both : out;
  }

  /**
   * Runs one tool call (see {@link callTool}). A SUCCESS whose data JSON is above the
   * reference threshold reaches the workflow as a reference to the payload store; an output
   * that would still be above the payload limit fails the activity `PayloadTooLarge`
   * (non-retryable: the run stops payload_too_large with its checkpoint, it never fails).
   */
  async function runOne(raw: RunToolInput): Promise<RunToolOutput> {
    // Large call args reached the workflow as a reference (largeArgsByReference): resolved here.
    const input = isPayloadRef(raw.args)
      ? { ...raw, args: await resolvePayloadRefs(payloads, raw.runId, raw.args) }
      : raw;
    const out = await callTool(input);
    // A fixture's result came from the workflow's own input: it is in history already.
    if (out.via === 'fixture' || out.result.kind !== 'SUCCESS') return guardToolOutput(out, input.tool);
    const r = out.result;
    const off = await offloadLarge(payloads, input.runId, r.data, payloadRefBytes, { terminal: r.terminal });
    if (!off.stored && off.bytes > MAX_PAYLOAD_BYTES) {
      const why = off.error ? ` (not stored by reference: ${redactText(off.error)})` : '';
      throw payloadTooLarge(`the result of tool ${input.tool}${why}`, off.bytes);
    }
    return guardToolOutput(off.stored ? { ...out, result: { ...r, data: off.data } } : out, input.tool);
  }

  /** The tool activity's output, when it fits in one payload. */
  function guardToolOutput(out: RunToolOutput, tool: string): RunToolOutput {
    return guardOutputSize(out, `the output of tool ${tool}`);
  }

  /** Runs one tool call. Reads run directly; writes run through the ledger. */
  async function callTool(input: RunToolInput): Promise<RunToolOutput> {
    if (input.fixture) {
      await counted(ctx, input.runId, input.tool);
      const recorded = input.fixture.result ?? { kind: 'SUCCESS' };
      // A script at the llm profile: its recorded undeclared error goes to the model (as the replay's).
      const result = input.toolErrors === 'model' ? undeclaredToModel(recorded, null) : recorded;
      return { result, progressVersion: null, via: 'fixture' };
    }
    const tool = registry.get(input.tool);
    if (!tool) {
      return {
        result: {
          kind: 'PRECONDITION',
          code: ResultCode.UNKNOWN_TOOL,
          unmet: `no tool named "${input.tool}"`,
        },
        progressVersion: await versionNow(ctx, input.runId),
        via: 'not_run',
      };
    }
    // Strict parse again at the point of execution: nothing runs on unvalidated args.
    const parsed = tool.schema.safeParse(input.args);
    if (!parsed.success) {
      return {
        result: classifyError(parsed.error),
        progressVersion: await versionNow(ctx, input.runId),
        via: 'not_run',
      };
    }
    const args = { ...input, args: parsed.data };
    const refused = await approvalOf(tool, input, parsed.data);
    if (refused)
      return { result: refused, progressVersion: await versionNow(ctx, input.runId), via: 'not_run' };

    if (tool.effect === 'read') return { ...(await runRead(ctx, tool, args)), via: 'executed' };

    if (input.operationKey === null) {
      return {
        result: {
          kind: 'PRECONDITION',
          code: ResultCode.MISSING_OPERATION_KEY,
          unmet: `write tool ${tool.name} needs an operation key`,
        },
        progressVersion: await versionNow(ctx, input.runId),
        via: 'not_run',
      };
    }
    const { attempt, activityId } = activityExecution();
    const toModel = input.toolErrors === 'model';
    // The workflow sends neither hash: the same normalisation the plan made, on the
    // args parsed above.
    const hashes =
      input.argsHash !== undefined && input.fingerprint !== undefined
        ? { argsHash: input.argsHash, fingerprint: input.fingerprint }
        : registry.hashes(tool.name, parsed.data);
    // The classified failure of this call's side effect, if it threw (per call: activities run concurrently).
    let lastFailure: ToolResult | null = null;
    const options = {
      key: input.operationKey,
      tool: tool.name,
      // The SHA-256 hash (not the fingerprint, which would conflict with a SHA-256 record of the same call).
      argsHash: hashes.argsHash,
      // A record written before the upgrade stored the fingerprint (docs/ledger.md "Args hash").
      legacyArgsHash: hashes.fingerprint,
      runId: input.runId,
      owner: `${identity}/${activityId}/attempt-${attempt}`,
      leaseMs,
      vendorIdempotent: tool.vendorIdempotent ?? false,
      ...(tool.reconcile ? { reconcile: tool.reconcile } : {}),
      // A commit retried through a database blip keeps the activity alive meanwhile.
      onCommitRetry: () => heartbeat(),
      classifyError: (err: unknown) => {
        if (err instanceof ResultNotSuccess) {
          lastFailure = err.result;
          return ledgerClass(err.result);
        }
        const classified = tool.classify?.(err) ?? classifyError(err);
        const inWorld = tool.usesWorldTransaction !== false;
        // An LLM run's model gets an undeclared failure to handle; the ledger
        // releases the claim when the world transaction rolled the write back, and keeps the
        // failure final otherwise (the side effect may have happened).
        lastFailure = toModel ? undeclaredToModel(classified, err) : classified;
        return thrownLedgerClass(inWorld ? lastFailure : classified, inWorld);
      },
    };
    // The ledger stores the business result (`data`), the same thing a duplicate is answered with.
    let executed: ToolResult | null = null;
    const run = async (tx: Tx, reExecution: boolean): Promise<unknown> => {
      const r = await execute(tool, args, tx, reExecution);
      if (r.kind !== 'SUCCESS') throw new ResultNotSuccess(r);
      executed = r;
      // A terminal result keeps its flag in the ledger, so a retried attempt answered from
      // the ledger still completes the run (the flag is not part of the business result).
      return r.terminal ? { [TERMINAL_MARK]: true, data: r.data ?? null } : (r.data ?? null);
    };
    const eventOf = (result: ToolResult, via: RunToolOutput['via']): ProgressEvent => ({
      runId: input.runId,
      tool: tool.name,
      effect: 'write',
      operationKey: input.operationKey,
      result,
      via,
    });
    // The counter and progress fact of an executed write ride in the ledger's commit.
    const book = ctx.bookkeeping;
    // The run's version as the commit left it: not read again after it.
    let committedVersion: number | null = null;
    const inCommit = book
      ? async (tx: LedgerTx) => {
          committedVersion = await book.write(tx, eventOf(executed ?? { kind: 'SUCCESS' }, 'executed'), true);
        }
      : undefined;
    const withBook = inCommit ? { ...options, inCommit } : options;
    const atomic = tool.atomicWithLedger === true && ctx.storeSharesLedger;
    const outcome = atomic
      ? await executeOnceAtomic(ledger, withBook, (tx, se) => run(tx, se.reExecution))
      : await executeOnce(ledger, withBook, (se) =>
          inStore(ctx.store, tool, (tx) => run(tx, se.reExecution)),
        );
    let mapped = mapOutcome(outcome, executed, lastFailure);
    // A failure the ledger kept final for an undeclared error: the model's to handle too.
    if (toModel && outcome.kind === 'failed_final')
      mapped = { ...mapped, result: undeclaredToModel(mapped.result, null) };
    const event = eventOf(mapped.result, mapped.via);
    const joined = inCommit !== undefined && outcome.kind === 'executed';
    const progressVersion = await afterCall(ctx, tool, event, {
      count: mapped.via === 'executed',
      joined,
      version: committedVersion,
    });
    return { ...mapped, progressVersion };
  }

  return { runTool };
}
