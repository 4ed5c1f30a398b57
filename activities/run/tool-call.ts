/**
 * One tool's side of a call, shared by the activities that run tools (`runTool`, and
 * `verifyPrecondition` when it re-runs a stopped read): the tool's execution (on the worker's tool store, when it has one),
 * the progress version after it, and the runtime's count of real executions.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ToolResult } from '../../guard';
import { cancellationSignalOrNever, heartbeat } from '../activity-context';
import { ProgressSourceError, readVersion, type ProgressEvent } from '../progress';
import { classifyError } from '../../tools/classify';
import { toResult, type AnyTool, type ToolReturn } from '../../tools/define-tool';
import { inStore } from '../../tools/store';
import { undeclaredToModel } from '../../tools/tool-errors';
import type { Tx } from '../../tools/tx';
import type { RunToolInput } from '../types';
import type { ActivityContext } from './context';

/** The key under which the ledger keeps a terminal write's result (see {@link unwrapTerminal}). */
export const TERMINAL_MARK = '$agentLoopGuardTerminal';

/** A stored result and whether the write that produced it was terminal. */
export function unwrapTerminal(stored: unknown): { data: unknown; terminal: boolean } {
  if (stored && typeof stored === 'object' && (stored as Record<string, unknown>)[TERMINAL_MARK] === true)
    return { data: (stored as { data?: unknown }).data ?? null, terminal: true };
  return { data: stored, terminal: false };
}

/** Runs the tool's `execute` with its tool context (`reExecution`: the ledger's word for a write). */
export async function execute(
  tool: AnyTool,
  input: RunToolInput,
  tx: Tx,
  reExecution = false,
): Promise<ToolResult> {
  const ret: ToolReturn = await tool.execute(input.args, {
    runId: input.runId,
    operationKey: input.operationKey,
    heartbeat,
    signal: cancellationSignalOrNever(),
    tx,
    reExecution,
    ...(input.toolErrors === 'model' ? { errorsToModel: true } : {}),
  });
  return toResult(ret);
}

/**
 * Runs a read (parsed args), counts it and tells the progress source of it:
 * its result (a throw classified) and the progress version after it.
 */
export async function runRead(
  ctx: ActivityContext,
  tool: AnyTool,
  input: RunToolInput,
): Promise<{ result: ToolResult; progressVersion: number | null }> {
  let result: ToolResult;
  try {
    result = await inStore(ctx.store, tool, (tx) => execute(tool, input, tx));
  } catch (err) {
    result = tool.classify?.(err) ?? classifyError(err);
    // An LLM run's model gets an undeclared failure to handle.
    if (input.toolErrors === 'model') result = undeclaredToModel(result, err);
  }
  const event = readEvent(input.runId, tool.name, result);
  return { result, progressVersion: await afterCall(ctx, tool, event, { count: true, joined: false }) };
}

/**
 * A call's bookkeeping, then the progress version after it ({@link progressAfter}): the
 * runtime's count of a real execution (`count`) and the progress source's fact. What lives in
 * the ledger's database ({@link ActivityContext.bookkeeping}) is one unit of work — or none,
 * when the write's ledger commit carried it (`joined`); the rest is written as before.
 */
export async function afterCall(
  ctx: ActivityContext,
  tool: AnyTool,
  e: ProgressEvent,
  o: {
    count: boolean;
    joined: boolean;
    /** The run's version the ledger commit that carried the bookkeeping learned (`joined`). */
    version?: number | null;
  },
): Promise<number | null> {
  const book = ctx.bookkeeping;
  let count = o.count;
  let observed = false;
  let known = o.joined ? (o.version ?? null) : null;
  if (book) {
    if (!o.joined) {
      try {
        known = await book.alone(e, count);
      } catch (err) {
        // The fact is the progress source's: failing it stops the run (progressAfter's rule).
        if (book.observes) throw progressFailure(err, tool.name);
        warnNotCounted(tool.name, err);
      }
    }
    count = count && !book.counts;
    observed = book.observes;
  }
  if (count) await counted(ctx, e.runId, tool.name);
  return progressAfter(ctx, tool, e, observed, book?.observes ? known : null);
}

/** What the progress source is told of an executed read. */
function readEvent(runId: string, tool: string, result: ToolResult): ProgressEvent {
  return { runId, tool, effect: 'read', operationKey: null, result, via: 'executed' };
}

/**
 * The run's progress version after a call: the worker's source is told of the call first,
 * then read; a tool's own hook (an MCP server's probe) refines it, given it as `base`. A
 * source or hook that fails is a non-retryable `progress_source_failed` naming it: the run
 * stops infrastructure_fault (never FAILED, never a false `no_progress`).
 */
export async function progressAfter(
  ctx: ActivityContext,
  tool: AnyTool,
  e: ProgressEvent,
  /** The source was told already (its fact rode in the ledger's commit). */
  observed = false,
  /**
   * The source's version as the unit that told it answered it (not read a second
   * time); null reads it.
   */
  known: number | null = null,
): Promise<number | null> {
  try {
    if (!observed) await ctx.progress.observe?.(e);
    const base = known ?? (await readVersion(ctx.progress, e.runId, tool.name));
    if (!tool.progressVersion) return base;
    const own = await tool.progressVersion({ runId: e.runId, base });
    if (own !== null && (typeof own !== 'number' || !Number.isSafeInteger(own) || own < 0))
      throw new ProgressSourceError(`tool ${tool.name}`, `progressVersion hook returned ${String(own)}`);
    return own;
  } catch (err) {
    throw progressFailure(err, tool.name);
  }
}

/** The run's version now, from the worker's source (a failure typed as in {@link progressAfter}). */
export async function versionNow(ctx: ActivityContext, runId: string): Promise<number> {
  try {
    return await readVersion(ctx.progress, runId);
  } catch (err) {
    throw progressFailure(err, null);
  }
}

/** Counts a real execution; a counter that cannot be written is logged, never the call's failure. */
export async function counted(ctx: ActivityContext, runId: string, tool: string): Promise<void> {
  await ctx.counters?.count(runId, tool).catch((err: unknown) => warnNotCounted(tool, err));
}

function warnNotCounted(tool: string, err: unknown): void {
  console.warn(`[agent-loop-guard] tool counter not written (${tool}): ${(err as Error)?.message ?? err}`);
}

/** A failed progress source as a non-retryable activity failure that names it (→ infrastructure_fault). */
function progressFailure(err: unknown, tool: string | null): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const message =
    err instanceof ProgressSourceError ? err.message : `progress source: ${(err as Error)?.message ?? err}`;
  return ApplicationFailure.create({
    type: 'progress_source_failed',
    nonRetryable: true,
    message: tool ? `${message} (after a call of ${tool})` : message,
    cause: err instanceof Error ? err : undefined,
  });
}
