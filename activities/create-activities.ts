/**
 * The activities a worker hosts: `plan` (ask the planner, validate and fingerprint its
 * proposal), `runTool` (run a tool; writes only through the ledger),
 * `verifyPrecondition` (re-check the world before a stopped run may resume) and
 * `reapLedger` (the ledger reaper's pass, activities/reaper.ts).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ConversationAccess } from '../common/conversation';
import type { Planner, PlannerInput, PlannerOutput } from '../common/planner';
import { LEDGER_UNAVAILABLE } from '../common/planner';
import { redact, redactText } from '../common/redact';
import {
  fixtureArgsSpecs,
  GuardReason,
  NEEDS_HUMAN_CODES,
  normalizeCall,
  ResultCode,
  type ToolResult,
} from '../guard';
import { activityExecution, activityTurnKey, cancellationSignalOrNever, heartbeat } from './activity-context';
import {
  approvalRequired,
  ApprovalStore,
  approvalVerifier,
  parseApprovalPolicy,
  type ApprovalPolicy,
} from './approvals';
import {
  executeOnce,
  executeOnceAtomic,
  LedgerState,
  sameArgsHash,
  sha256ArgsHash,
  SideEffectErrorClass,
  SqlLedger,
  type ExecuteOutcome,
  type Ledger,
} from './ledger';
import type { LlmProvider } from './planners/llm-common';
import { ConversationStore, ConversationStoreFault, storeFaultsTyped } from './planners/conversation-store';
import { createScriptedPlanner, scriptOf } from './planners/scripted';
import { checkpointKeyFromEnv, createCheckpointActivities } from './checkpoint-seal';
import { createOperatorActivities } from './operators/activities';
import { OperatorRegistry } from './operators/registry';
import { createReaperActivities, type ReaperDeps } from './reaper';
import { offloadLarge, payloadRefBytesFromEnv, PayloadStore, resolvePayloadRefs } from './payloads';
import {
  guardOutputSize,
  isPayloadRef,
  jsonBytes,
  MAX_PAYLOAD_BYTES,
  payloadTooLarge,
} from '../common/payload-limits';
import { PLAIN_ROWS, type RowCodec } from './row-codec';
import { classifyError } from './tools/classify';
import { toResult, type AnyTool, type ToolReturn } from './tools/define-tool';
import type { World } from './tools/demo/world';
import { worldProgress } from './tools/demo/world';
import {
  factOf,
  ObservedProgress,
  ProgressSourceError,
  readVersion,
  ToolCounters,
  type ProgressEvent,
  type ProgressSource,
} from './progress';
import type { NormalizedProposal, ToolRegistry } from './tools/registry';
import type { Tx } from './tools/tx';
import type {
  PlanInput,
  PlanOutput,
  ProposalInfo,
  RunToolInput,
  RunToolOutput,
  VerifyInput,
  VerifyOutput,
} from './types';

/** What the activities need. */
export interface ActivityDeps {
  readonly registry: ToolRegistry;
  /** The demo's world database, when the worker hosts the demo (null/absent: no world). */
  readonly world?: World | null;
  readonly ledger: Ledger;
  /** True when the ledger lives in the world's database file (atomic business writes). */
  readonly ledgerSharesWorldDb?: boolean;
  /**
   * The worker's progress source (docs/spec.md §7.8). Default: the demo world's version when
   * there is a world, else {@link ObservedProgress} (new read results, committed writes).
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
   * Where approvals live (activities/approvals). By default beside the ledger, in its
   * database; null: none (a call that needs an approval can then never run).
   */
  readonly approvals?: ApprovalStore | null;
  /** Which calls need an approval beyond the tools' own `requiresApproval`; default: `AGENT_APPROVAL_POLICY`. */
  readonly approvalPolicy?: ApprovalPolicy;
  /** The operators this worker trusts (activities/operators); default: `AGENT_OPERATORS_FILE`, else open mode. */
  readonly operators?: OperatorRegistry;
  /** The checkpoint seal key (activities/checkpoint-seal.ts); default: `AGENT_CHECKPOINT_KEY` or a local key file. */
  readonly checkpointKey?: Buffer;
  /**
   * Where LLM planners keep their conversations (activities/planners/conversation-store.ts).
   * By default beside the ledger, in its database; null: none (the conversation then travels
   * in the planner's memory, through workflow history, as before issue 9).
   */
  readonly conversations?: ConversationAccess | null;
  /**
   * Seals what the default conversation and payload stores write (activities/row-codec.ts):
   * `createAgentWorker` passes the worker's payload codec, so data moved out of history stays
   * encrypted; default plain text.
   */
  readonly rows?: RowCodec;
  /**
   * Where large tool results live (activities/payloads). By default beside the ledger, in
   * its database; null: none (a result above the payload limit then stops the run).
   */
  readonly payloads?: PayloadStore | null;
  /** Results whose data JSON is above this many bytes go by reference; default `AGENT_PAYLOAD_REF_BYTES` (64 KB). */
  readonly payloadRefBytes?: number;
}

/** The key under which the ledger keeps a terminal write's result (see {@link unwrapTerminal}). */
const TERMINAL_MARK = '$agentLoopGuardTerminal';

/** A stored result and whether the write that produced it was terminal. */
function unwrapTerminal(stored: unknown): { data: unknown; terminal: boolean } {
  if (stored && typeof stored === 'object' && (stored as Record<string, unknown>)[TERMINAL_MARK] === true)
    return { data: (stored as { data?: unknown }).data ?? null, terminal: true };
  return { data: stored, terminal: false };
}

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

/** Creates the activity functions over their dependencies. */
export function createActivities(deps: ActivityDeps) {
  const { registry, ledger } = deps;
  const world = deps.world ?? null;
  const progress: ProgressSource = deps.progress ?? (world ? worldProgress(world) : observedBeside(ledger));
  const counters = deps.counters !== undefined ? deps.counters : countersBeside(ledger);
  const leaseMs = deps.leaseMs ?? 30_000;
  const identity = deps.identity ?? `worker-${process.pid}`;
  const scripted = createScriptedPlanner();
  const operators = deps.operators ?? OperatorRegistry.fromEnv();
  // Every use of an approval (plan, runTool, verifyPrecondition) trusts only rows whose
  // signature verifies against this worker's operators (open mode: every row, as stored).
  const approvals = (deps.approvals !== undefined ? deps.approvals : approvalStoreBeside(ledger))?.verifiedBy(
    approvalVerifier(operators),
  );
  // LLM planners keep their conversation here, not in workflow history (issue 9).
  const rows = deps.rows ?? PLAIN_ROWS;
  const store = deps.conversations !== undefined ? deps.conversations : ConversationStore.over(ledger, rows);
  // Its database failures typed, so the plan activity tells an outage from a planner failure.
  const conversations = store ? storeFaultsTyped(store) : null;
  // A bad policy fails the worker at start, naming the variable, instead of at the first call.
  const approvalPolicy = deps.approvalPolicy ?? parseApprovalPolicy(process.env.AGENT_APPROVAL_POLICY);
  // Large results go to the payload store; the workflow gets a reference (issue 9).
  const payloads = deps.payloads !== undefined ? deps.payloads : payloadStoreBeside(ledger, rows);
  const payloadRefBytes = deps.payloadRefBytes ?? payloadRefBytesFromEnv();

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

  /**
   * What the guard needs to know about the ledger record of a proposal's key (docs/spec.md §8).
   * The ledger compares SHA-256 args hashes, the guard compares fingerprints: a record of the
   * same call is handed over with the proposal's own fingerprint (→ return_cached_success),
   * any other with its stored hash, which no fingerprint equals (→ idempotency_conflict).
   */
  async function ledgerView(n: NormalizedProposal, runId: string): Promise<ProposalInfo['ledger']> {
    if (n.operationKey === null) return null;
    const rec = await ledger.get(n.operationKey);
    if (!rec || rec.state !== LedgerState.SUCCEEDED) return null;
    const same = rec.tool === n.tool && sameArgsHash(rec.argsHash, n.argsHash, n.fingerprint);
    return {
      state: rec.state,
      fingerprint: same ? n.fingerprint : rec.argsHash,
      // A large stored result reaches the workflow by reference, like a fresh one.
      result: (await offloadLarge(payloads, runId, unwrapTerminal(rec.result).data, payloadRefBytes)).data,
    };
  }

  /**
   * The planner's turn. With a conversation store, each scheduled `plan` activity's answer is
   * kept under its turn key (workflow run id + activity id): a retried attempt returns it,
   * so the model is not asked (nor paid) twice and the conversation is not appended twice.
   */
  async function plannerTurn(
    planner: Planner,
    plannerInput: PlannerInput,
    store: ConversationAccess | null,
  ): Promise<PlannerOutput> {
    const key = store ? activityTurnKey() : null;
    try {
      if (!store || !key) return await planner.next(plannerInput);
      const stored = (await store.storedTurn(key)) as PlannerOutput | null;
      if (stored) return stored;
      const out = await planner.next(plannerInput);
      return (await store.saveTurn(key, plannerInput.runId, out)) as PlannerOutput;
    } catch (err) {
      if (!(err instanceof ConversationStoreFault)) throw err;
      // The database is down, not the planner: after its retries the run stops infrastructure_fault.
      throw ApplicationFailure.create({
        type: LEDGER_UNAVAILABLE,
        message: `conversation store unavailable: ${redactText(err.message)}`,
      });
    }
  }

  /** Asks the planner for its next turn and validates + fingerprints the proposal. */
  async function plan(input: PlanInput): Promise<PlanOutput> {
    // Nothing above the payload limit goes back to the workflow (it would fail the task, not stop the run).
    return guardOutputSize(await planTurn(input), 'the plan activity output');
  }

  async function planTurn(input: PlanInput): Promise<PlanOutput> {
    const planner = plannerFor(input.planner.kind);
    const llm = input.planner.kind !== 'scripted';
    const store = llm ? conversations : null;
    const plannerInput: PlannerInput = {
      runId: input.runId,
      goal: input.goal,
      planner: input.planner,
      tools: registry.descriptors(),
      memory: input.memory,
      // A large tool result reached the workflow as a reference; the model sees its usual preview.
      observation: llm
        ? await resolvePayloadRefs(
            payloads,
            input.runId,
            (input.observation as PlannerInput['observation']) ?? null,
            {
              missing: 'preview',
            },
          )
        : ((input.observation as PlannerInput['observation']) ?? null),
      facts: input.facts ?? null,
      ...(store ? { conversations: store } : {}),
    };
    const out = await plannerTurn(planner, plannerInput, store);
    const turn = out.turn;
    if (turn.type !== 'call') return { turn, memory: out.memory, proposal: null };

    if (input.planner.kind === 'scripted' && !input.planner.live) {
      // Script mode plays both planner and tools: fixture tools normalise as the replay does.
      const file = scriptOf(input);
      const n = normalizeCall(turn.tool, turn.args, fixtureArgsSpecs(file).get(turn.tool));
      const call = file.calls[turn.scriptIndex ?? -1];
      return {
        turn,
        memory: out.memory,
        proposal: {
          tool: turn.tool,
          args: turn.args,
          canonicalArgs: n.canonicalArgs,
          fingerprint: n.fingerprint,
          argsHash: sha256ArgsHash(turn.tool, n.canonicalArgs),
          operationKey: turn.operationKey ?? null,
          effect: file.tools?.[turn.tool]?.effect ?? 'read',
          rejection: null,
          ledger: null,
          fixture: { result: call?.result ?? null, progressVersion: call?.progressVersion ?? null },
        },
      };
    }
    const n = registry.normalize(turn.tool, turn.args, turn.operationKey);
    try {
      const proposal: ProposalInfo = {
        ...n,
        ledger: n.rejection ? null : await ledgerView(n, input.runId),
        fixture: null,
        approval: n.rejection ? null : await approvalView(n, input.runId, input.approvalStopRef ?? null),
      };
      // The proposal carries the args the tool gets; the turn's copy would only double them in history.
      const lean = llm ? { ...turn, args: null } : turn;
      return await largeArgsByReference({ turn: lean, memory: out.memory, proposal }, input.runId);
    } catch (err) {
      // The planner answered; the ledger could not be read. Typed, so that once the retries
      // are spent the run stops `infrastructure_fault`, not `planner_failed`.
      throw ApplicationFailure.create({
        type: LEDGER_UNAVAILABLE,
        message: `ledger unavailable: ${redactText((err as Error)?.message ?? String(err))}`,
        cause: err instanceof Error ? err : undefined,
      });
    }
  }

  /**
   * A model reply whose call args are above the reference threshold: the args reach the
   * workflow (turn, proposal, trace) as payload references, and `runTool` resolves them. The
   * fingerprint and the args hash were computed from the real args first.
   */
  async function largeArgsByReference(out: PlanOutput, runId: string): Promise<PlanOutput> {
    const p = out.proposal;
    if (!p || !payloads || jsonBytes(p.args) <= payloadRefBytes) return out;
    const args = await payloads.put(runId, p.args);
    const canonicalArgs = await payloads.put(runId, p.canonicalArgs);
    const turn = out.turn.type === 'call' && out.turn.args !== null ? { ...out.turn, args } : out.turn;
    return { ...out, turn, proposal: { ...p, args, canonicalArgs } };
  }

  /**
   * Whether the call needs an approval and the id of one that may authorise it now: granted
   * for this run, this fingerprint and the stop the run has just lifted (`stopRef`), unused,
   * unexpired, not denied. Without a lifted stop nothing is offered. When none is, the request
   * is audited: the workflow now stops approval_required showing the call.
   */
  async function approvalView(
    n: NormalizedProposal,
    runId: string,
    stopRef: string | null,
  ): Promise<ProposalInfo['approval']> {
    const tool = registry.get(n.tool);
    if (!tool || !approvalRequired(tool, n.args, approvalPolicy)) return null;
    const q = { runId, fingerprint: n.fingerprint, argsHash: n.argsHash, stopRef, by: identity };
    const found = approvals ? await approvals.findUsable(q) : null;
    if (!found && approvals) {
      const args = JSON.stringify(redact(n.canonicalArgs));
      await approvals.request(runId, identity, `${n.fingerprint} ${n.tool} ${args}`);
    }
    return { required: true, approvalId: found?.id ?? null, stopRef: found ? stopRef : null };
  }

  /**
   * Uses up the call's approval before the tool runs (single use, bound to the run and to the
   * fingerprint of the args that will run — recomputed here, never taken from the caller).
   * Returns the refusal when the call must not run, null when it may.
   */
  async function useApproval(tool: AnyTool, input: RunToolInput, args: unknown): Promise<ToolResult | null> {
    const required = approvalRequired(tool, args, approvalPolicy);
    const approvalId = input.approvalId ?? null;
    const { attempt, activityId } = activityExecution();
    const by = `${input.runId}/${activityId}`;
    if (approvalId === null) {
      if (!required) return null;
      await approvals?.refuse(
        input.runId,
        by,
        `${input.fingerprint}: ${tool.name} called without an approval`,
      );
      return {
        kind: 'FATAL',
        code: ResultCode.APPROVAL_REQUIRED,
        message: `${tool.name} needs a person's approval of this exact call and none was given: it did not run`,
      };
    }
    if (!approvals) {
      return {
        kind: 'FATAL',
        code: ResultCode.APPROVAL_INVALID,
        message: `approval ${approvalId} cannot be checked: this worker has no approval store; ${tool.name} did not run`,
      };
    }
    const n = registry.normalize(tool.name, args, input.operationKey);
    const outcome = await approvals.consume({
      approvalId,
      runId: input.runId,
      fingerprint: n.fingerprint,
      argsHash: n.argsHash,
      stopRef: input.approvalStopRef ?? null,
      by,
      // Only a Temporal retry of this same activity may find it used by itself.
      retry: attempt > 1 && activityId !== 'direct',
    });
    if (outcome.ok) return null;
    return {
      kind: 'FATAL',
      code: ResultCode.APPROVAL_INVALID,
      message: `approval refused (${outcome.why}): ${outcome.message}; ${tool.name} did not run`,
    };
  }

  async function execute(tool: AnyTool, input: RunToolInput, tx: Tx): Promise<ToolResult> {
    const ret: ToolReturn = await tool.execute(input.args, {
      runId: input.runId,
      operationKey: input.operationKey,
      heartbeat,
      signal: cancellationSignalOrNever(),
      tx,
    });
    return toResult(ret);
  }

  /**
   * The run's progress version after a call: the worker's source is told of the call first,
   * then read; a tool's own hook (an MCP server's probe) refines it, given it as `base`. A
   * source or hook that fails is a non-retryable `progress_source_failed` naming it: the run
   * stops infrastructure_fault (never FAILED, never a false `no_progress`).
   */
  async function progressAfter(tool: AnyTool, e: ProgressEvent): Promise<number | null> {
    try {
      await progress.observe?.(e);
      const base = await readVersion(progress, e.runId, tool.name);
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
  async function versionNow(runId: string): Promise<number> {
    try {
      return await readVersion(progress, runId);
    } catch (err) {
      throw progressFailure(err, null);
    }
  }

  /** Counts a real execution; a counter that cannot be written is logged, never the call's failure. */
  async function counted(runId: string, tool: string): Promise<void> {
    await counters?.count(runId, tool).catch((err: unknown) => {
      console.warn(
        `[agent-loop-guard] tool counter not written (${tool}): ${(err as Error)?.message ?? err}`,
      );
    });
  }

  function mapOutcome(
    outcome: ExecuteOutcome<unknown>,
    executed: ToolResult | null,
    failure: ToolResult | null,
  ): { result: ToolResult; via: RunToolOutput['via'] } {
    switch (outcome.kind) {
      case 'executed':
        return { result: executed ?? { kind: 'SUCCESS', data: outcome.result }, via: 'executed' };
      case 'cached': {
        const stored = unwrapTerminal(outcome.result);
        const result: ToolResult = stored.terminal
          ? { kind: 'SUCCESS', data: stored.data, terminal: true }
          : { kind: 'SUCCESS', data: stored.data };
        return { result, via: 'ledger' };
      }
      case 'in_progress':
        return {
          result: { kind: 'RETRYABLE', code: ResultCode.IN_PROGRESS, retryAfterMs: outcome.retryAfterMs },
          via: 'not_run',
        };
      case 'unknown':
        return {
          result: {
            kind: 'FATAL',
            code: ResultCode.OUTCOME_UNKNOWN,
            message: `operation ${outcome.key}: the executor died after dispatch; settle it with "agentctl ledger resolve ${outcome.key}"`,
          },
          via: 'not_run',
        };
      case 'failed_final':
        return {
          result: {
            kind: 'FATAL',
            code: outcome.error.code ?? ResultCode.FAILED_FINAL,
            message: outcome.error.message,
          },
          via: outcome.replayed ? 'ledger' : 'executed',
        };
      case 'failed_retryable':
        return { result: failure ?? classifyError(new Error(outcome.error.message)), via: 'executed' };
      case 'conflict':
        return {
          result: { kind: 'FATAL', code: ResultCode.IDEMPOTENCY_CONFLICT, message: outcome.error.message },
          via: 'not_run',
        };
    }
  }

  /** A tool's side of a call: in a world transaction, unless the tool never touches the world. */
  function inWorld<T>(tool: AnyTool, fn: (tx: Tx) => Promise<T>): Promise<T> {
    if (!world) return fn(NO_WORLD_TX);
    return tool.usesWorldTransaction === false ? fn(world.tx) : world.transaction(fn);
  }

  /**
   * Runs one tool call (see {@link callTool}). A SUCCESS whose data JSON is above the
   * reference threshold reaches the workflow as a reference to the payload store; an output
   * that would still be above the payload limit fails the activity `PayloadTooLarge`
   * (non-retryable: the run stops payload_too_large with its checkpoint, it never fails).
   */
  async function runTool(raw: RunToolInput): Promise<RunToolOutput> {
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
      await world?.countCall(input.runId, input.tool);
      await counted(input.runId, input.tool);
      return { result: input.fixture.result ?? { kind: 'SUCCESS' }, progressVersion: null, via: 'fixture' };
    }
    const tool = registry.get(input.tool);
    if (!tool) {
      return {
        result: {
          kind: 'PRECONDITION',
          code: ResultCode.UNKNOWN_TOOL,
          unmet: `no tool named "${input.tool}"`,
        },
        progressVersion: await versionNow(input.runId),
        via: 'not_run',
      };
    }
    // Strict parse again at the point of execution: nothing runs on unvalidated args.
    const parsed = tool.schema.safeParse(input.args);
    if (!parsed.success) {
      return {
        result: classifyError(parsed.error),
        progressVersion: await versionNow(input.runId),
        via: 'not_run',
      };
    }
    const args = { ...input, args: parsed.data };
    const refused = await useApproval(tool, input, parsed.data);
    if (refused) return { result: refused, progressVersion: await versionNow(input.runId), via: 'not_run' };

    if (tool.effect === 'read') {
      let result: ToolResult;
      try {
        result = await inWorld(tool, (tx) => execute(tool, args, tx));
      } catch (err) {
        result = tool.classify?.(err) ?? classifyError(err);
      }
      await counted(input.runId, tool.name);
      const event = readEvent(input.runId, tool.name, result);
      return { result, progressVersion: await progressAfter(tool, event), via: 'executed' };
    }

    if (input.operationKey === null) {
      return {
        result: {
          kind: 'PRECONDITION',
          code: ResultCode.MISSING_OPERATION_KEY,
          unmet: `write tool ${tool.name} needs an operation key`,
        },
        progressVersion: await versionNow(input.runId),
        via: 'not_run',
      };
    }
    const { attempt, activityId } = activityExecution();
    // The classified failure of this call's side effect, if it threw (per call: activities run concurrently).
    let lastFailure: ToolResult | null = null;
    const options = {
      key: input.operationKey,
      tool: tool.name,
      // A workflow scheduled before the upgrade sends no argsHash: compute it from the args
      // (not the fingerprint, which would conflict with a SHA-256 record of the same call).
      argsHash: input.argsHash ?? registry.normalize(tool.name, parsed.data, input.operationKey).argsHash,
      // A record written before the upgrade stored the fingerprint (docs/ledger.md "Args hash").
      legacyArgsHash: input.fingerprint,
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
        lastFailure = tool.classify?.(err) ?? classifyError(err);
        return thrownLedgerClass(lastFailure, tool.usesWorldTransaction !== false);
      },
    };
    // The ledger stores the business result (`data`), the same thing a duplicate is answered with.
    let executed: ToolResult | null = null;
    const run = async (tx: Tx): Promise<unknown> => {
      const r = await execute(tool, args, tx);
      if (r.kind !== 'SUCCESS') throw new ResultNotSuccess(r);
      executed = r;
      // A terminal result keeps its flag in the ledger, so a retried attempt answered from
      // the ledger still completes the run (the flag is not part of the business result).
      return r.terminal ? { [TERMINAL_MARK]: true, data: r.data ?? null } : (r.data ?? null);
    };
    const atomic = tool.atomicWithLedger === true && deps.ledgerSharesWorldDb === true;
    const outcome = atomic
      ? await executeOnceAtomic(ledger, options, (tx) => run(tx))
      : await executeOnce(ledger, options, () => inWorld(tool, (tx) => run(tx)));
    const mapped = mapOutcome(outcome, executed, lastFailure);
    if (mapped.via === 'executed') await counted(input.runId, tool.name);
    const event: ProgressEvent = {
      runId: input.runId,
      tool: tool.name,
      effect: 'write',
      operationKey: input.operationKey,
      result: mapped.result,
      via: mapped.via,
    };
    return { ...mapped, progressVersion: await progressAfter(tool, event) };
  }

  /** Re-verifies, from external state, that what stopped a run has changed. */
  async function verifyPrecondition(raw: VerifyInput): Promise<VerifyOutput> {
    const input = isPayloadRef(raw.blockedArgs)
      ? { ...raw, blockedArgs: await resolvePayloadRefs(payloads, raw.runId, raw.blockedArgs) }
      : raw;
    const version = await versionNow(input.runId);
    if (input.reason === GuardReason.APPROVAL_REQUIRED || input.reason === ResultCode.APPROVAL_INVALID) {
      return { ...(await approvalLifts(input)), progressVersion: version };
    }
    if (input.reason === ResultCode.OUTCOME_UNKNOWN && input.operationKey) {
      const rec = await ledger.get(input.operationKey);
      const settled = rec !== null && rec.state !== LedgerState.UNKNOWN;
      return {
        changed: settled,
        progressVersion: version,
        detail: settled
          ? `ledger record ${input.operationKey} settled as ${rec?.state}`
          : `ledger record ${input.operationKey} is still UNKNOWN`,
      };
    }
    const tool = input.blockedTool ? registry.get(input.blockedTool) : undefined;
    if (tool?.checkPrecondition && input.blockedArgs !== undefined && input.blockedArgs !== null) {
      const parsed = tool.schema.safeParse(input.blockedArgs);
      if (parsed.success) {
        const unmet = await tool.checkPrecondition(parsed.data, world?.tx ?? NO_WORLD_TX);
        return {
          changed: unmet === null,
          progressVersion: version,
          detail:
            unmet === null ? `${tool.name}: precondition now met` : `${tool.name}: still unmet: ${unmet}`,
        };
      }
    }
    let now = version;
    let reran = '';
    if (now <= input.checkpointProgressVersion && tool?.effect === 'read' && progress.observe) {
      // Nothing moved the source yet, and the stop was on a read: reads are safe to repeat, so
      // run it again and let the source judge its result (new content is progress).
      const again = await rerunRead(tool, input);
      if (again !== null) {
        now = again;
        reran = ` (re-ran ${tool.name})`;
      }
    }
    const changed = now > input.checkpointProgressVersion;
    return {
      changed,
      progressVersion: now,
      detail: changed
        ? `external state moved from version ${input.checkpointProgressVersion} to ${now}${reran}`
        : `external state unchanged at version ${now}${reran}`,
    };
  }

  /** Runs a stopped read once more for resume verification; its version after, or null if it could not run. */
  async function rerunRead(tool: AnyTool, input: VerifyInput): Promise<number | null> {
    const parsed = tool.schema.safeParse(input.blockedArgs);
    if (!parsed.success) return null;
    const call: RunToolInput = {
      runId: input.runId,
      tool: tool.name,
      args: parsed.data,
      operationKey: null,
      fingerprint: input.blockedFingerprint ?? '',
      fixture: null,
    };
    let result: ToolResult;
    try {
      result = await inWorld(tool, (tx) => execute(tool, call, tx));
    } catch (err) {
      result = tool.classify?.(err) ?? classifyError(err);
    }
    await counted(input.runId, tool.name);
    return progressAfter(tool, readEvent(input.runId, tool.name, result));
  }

  /** The `approval` lift rule: a valid approval exists for this run, this stop and the blocked call. */
  async function approvalLifts(input: VerifyInput): Promise<Omit<VerifyOutput, 'progressVersion'>> {
    const fingerprint = input.blockedFingerprint ?? null;
    const stopRef = input.stopRef ?? null;
    if (fingerprint === null || stopRef === null) {
      return {
        changed: false,
        detail: 'the stop names no blocked call or checkpoint an approval could be bound to',
      };
    }
    if (!approvals) return { changed: false, detail: 'this worker has no approval store' };
    const check = await approvals.checkStop(input.runId, fingerprint, stopRef, `${input.runId}/verify`);
    if (!check.ok) return { changed: false, detail: `not approved (${check.why}): ${check.message}` };
    const a = check.approval;
    return {
      changed: true,
      detail: `approval ${a.id} ${a.auth && !operators.isOpen ? 'signed by' : 'by'} ${a.approver}, valid until ${a.expiresAt}: ${a.reason}`,
    };
  }

  /** The run's progress version now (at start, for initialProgressVersion). */
  async function currentProgress(runId: string): Promise<number> {
    // Retried until it answers (an outage delays the first step; it never fails the run).
    return readVersion(progress, runId);
  }

  const { reapLedger } = createReaperActivities({ ledger, ...deps.reaper });

  /** Whether the planner answers now (the lift rule of a `planner_failed` stop). */
  async function checkPlanner(
    input: Pick<PlanInput, 'runId' | 'planner'>,
  ): Promise<{ ok: boolean; detail: string }> {
    let planner: Planner;
    try {
      planner = plannerFor(input.planner.kind);
    } catch (err) {
      return { ok: false, detail: (err as Error).message };
    }
    if (!planner.health) return { ok: true, detail: `planner ${input.planner.kind} is configured` };
    const problem = await planner.health(input.planner);
    return problem === null
      ? { ok: true, detail: `planner ${input.planner.kind} answered its health check` }
      : { ok: false, detail: `planner ${input.planner.kind} still failing: ${redactText(problem)}` };
  }

  return {
    plan,
    runTool,
    verifyPrecondition,
    currentProgress,
    reapLedger,
    checkPlanner,
    ...createOperatorActivities(operators),
    ...createCheckpointActivities(deps.checkpointKey ?? checkpointKeyFromEnv()),
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

/** What the progress source is told of an executed read. */
function readEvent(runId: string, tool: string, result: ToolResult): ProgressEvent {
  return { runId, tool, effect: 'read', operationKey: null, result, via: 'executed' };
}

/** A `ctx.tx` for workers without a world database: tools keep their own stores. */
const NO_WORLD_TX: Tx = {
  run: noWorld,
  all: noWorld,
  get: noWorld,
};

function noWorld(): never {
  throw new TypeError(
    'ctx.tx: this worker has no world database (the demo world is opened only with openWorkerDeps({ demo })); ' +
      'a tool keeps its own store',
  );
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

/** The approval store in the ledger's database, or null when the ledger has none to share. */
function approvalStoreBeside(ledger: Ledger): ApprovalStore | null {
  try {
    return ApprovalStore.over(ledger);
  } catch {
    return null;
  }
}

/** The activity functions, for `proxyActivities<Activities>()`. */
export type Activities = ReturnType<typeof createActivities>;
