/**
 * The `plan` activity: asks the planner for its next turn, then validates and fingerprints
 * its proposal and tells the guard what the ledger and the approvals know of it.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { ConversationAccess } from '../../common/conversation';
import type { Planner, PlannerInput, PlannerOutput } from '../../common/planner';
import { LEDGER_UNAVAILABLE, UNREADABLE_REPLY_ERROR } from '../../common/planner';
import { UnreadableReplyError } from '../../planners/errors';
import { guardOutputSize, jsonBytes } from '../../common/payload-limits';
import { redact, redactText } from '../../common/redact';
import { fixtureArgsSpecs, normalizeCall, scriptCallAt } from '../../guard';
import { activityAttempt, activityTurnKey, attemptDeadlineMs, warn } from '../activity-context';
import { approvalRequired } from '../../storage/approvals';
import { LedgerState, sameArgsHash, sha256ArgsHash } from '../../storage/ledger';
import { ConversationStoreFault } from '../../storage/conversation-store';
import { scriptOf } from '../../planners/scripted';
import { offloadLarge, resolvePayloadRefs } from '../../storage/payloads';
import type { NormalizedProposal } from '../../tools/registry';
import { refuseForeignTools, scopedRegistry } from '../../tools/spawn-agent';
import type { PlanInput, PlanOutput, ProposalInfo } from '../types';
import type { ActivityContext } from './context';
import { unwrapTerminal } from './tool-call';
import { spendAccess } from '../../worker/spend';
import { SpendStoreUnavailableError, type TurnUsage } from '../../storage/spend';
import type { ServedUsageAccess } from '../../common/planner';
import { DEFAULT_TENANT } from '../../common/contracts';
import { ScriptCalls } from './script-activity';

/**
 * The plan failure `err` as the workflow sees it, carrying the turn's claimed usage in its
 * details: the workflow charges it before the stop (workflows/plan-failure.ts). Its
 * type and retryability are kept.
 */
function withUsage(err: unknown, usage: { tokens: number; costUsd: number }): unknown {
  const details = [{ usage: { tokens: usage.tokens, costUsd: usage.costUsd } }];
  if (err instanceof ApplicationFailure)
    return ApplicationFailure.create({
      type: err.type ?? undefined,
      message: err.message,
      nonRetryable: err.nonRetryable ?? undefined,
      details,
      cause: err.cause,
    });
  if (err instanceof Error && err.name !== 'CancelledFailure' && !(err instanceof CancelledFailure))
    return ApplicationFailure.create({ type: err.name, message: err.message, details });
  return err;
}

/** The largest planned turn `runTool` hands back with a tool's result; above it `plan` runs. */
const PREFETCH_MAX_BYTES = 64 * 1024;

/** The `plan` activity over the worker's context. */
export function createPlanActivity(ctx: ActivityContext, scripts = new ScriptCalls(ctx.payloads)) {
  const { registry, ledger, identity, approvals, approvalPolicy, conversations, payloads, payloadRefBytes } =
    ctx;

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
      // Another call holds the key: the guard stops idempotency_conflict, and the report names it.
      ...(same ? {} : { holder: { runId: rec.runId, tool: rec.tool } }),
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
    served: TurnUsage | null,
  ): Promise<PlannerOutput> {
    if (!served) return askPlanner(planner, plannerInput, store);
    // Served usage: this attempt's outcome carries every request of the turn (every
    // attempt's) and any this run's killed attempts left behind, each counted once.
    await dbCall(() => served.begin());
    let out: PlannerOutput;
    try {
      out = await askPlanner(planner, { ...plannerInput, served: servedAccess(served) }, store);
    } catch (err) {
      const claimed = await served.claim().catch(() => null);
      throw claimed ? withUsage(err, claimed) : err;
    }
    const claimed = await dbCall(() => served.claim());
    if (claimed.orphans > 0 || claimed.estimated > 0)
      warn(
        `turn usage: ${claimed.requests} model request(s), ${claimed.orphans} left by an attempt that did not finish, ` +
          `${claimed.estimated} counted at their worst case (no usage recorded or no answer)`,
      );
    return { ...out, turn: { ...out.turn, usage: { tokens: claimed.tokens, costUsd: claimed.costUsd } } };
  }

  async function askPlanner(
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
      if (err instanceof UnreadableReplyError)
        // The provider billed the reply: its usage rides to the workflow, which charges it.
        throw ApplicationFailure.create({
          type: UNREADABLE_REPLY_ERROR,
          message: err.message,
          nonRetryable: true,
          details: [{ usage: err.usage }],
        });
      if (err instanceof SpendStoreUnavailableError)
        throw ApplicationFailure.create({ type: LEDGER_UNAVAILABLE, message: err.message });
      if (!(err instanceof ConversationStoreFault)) throw err;
      // The database is down, not the planner: after its retries the run stops infrastructure_fault.
      throw ApplicationFailure.create({
        type: LEDGER_UNAVAILABLE,
        message: `conversation store unavailable: ${redactText(err.message)}`,
      });
    }
  }

  /** A served-usage store call whose database failure stops the run infrastructure_fault after the retries. */
  async function dbCall<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      throw ApplicationFailure.create({
        type: LEDGER_UNAVAILABLE,
        message: `served-usage store unavailable: ${redactText((err as Error)?.message ?? String(err))}`,
      });
    }
  }

  /**
   * The planner's view of the turn's rows: a request is not sent when its record cannot be
   * written; a record of its end that fails is only warned about (the row then counts at its
   * worst case, which errs on the run's side).
   */
  function servedAccess(served: TurnUsage): ServedUsageAccess {
    const down = (err: unknown) =>
      new SpendStoreUnavailableError(
        `served-usage store unavailable: ${redactText((err as Error)?.message ?? String(err))}`,
      );
    return {
      earlier: () => served.earlier().catch((e: unknown) => Promise.reject(down(e))),
      sent: (worst, maxTokens) =>
        served.sent(worst, maxTokens).catch((e: unknown) => Promise.reject(down(e))),
      ended: (id, end) =>
        served.ended(id, end).catch((e: unknown) => {
          warn(
            `served usage: could not record the end of request ${id}; it counts at its worst case: ${String(e)}`,
          );
        }),
    };
  }

  /** Asks the planner for its next turn and validates + fingerprints the proposal. */
  async function plan(input: PlanInput): Promise<PlanOutput> {
    // Nothing above the payload limit goes back to the workflow (it would fail the task, not stop the run).
    return guardOutputSize(await planTurn(input), 'the plan activity output');
  }

  /**
   * A scripted run's next turn, planned inside `runTool` right after the tool answered (issue
   * 19): the same answer `plan` would give now, or null when `plan` must be asked instead:
   * the planner is not scripted, the ledger could not be read (`plan` then stops the run
   * `infrastructure_fault` after its retries), the call needs an approval (`plan` asks for it:
   * a prefetch never files a request a stop might discard), or the answer is too large.
   */
  async function prefetchPlan(input: PlanInput): Promise<PlanOutput | null> {
    if (input.planner.kind !== 'scripted' || input.approvalStopRef) return null;
    try {
      const out = await planTurn(input, { prefetch: true });
      return out && jsonBytes(out) <= PREFETCH_MAX_BYTES ? out : null;
    } catch {
      return null;
    }
  }

  async function planTurn(input: PlanInput): Promise<PlanOutput>;
  async function planTurn(input: PlanInput, opts: { prefetch: true }): Promise<PlanOutput | null>;
  async function planTurn(raw: PlanInput, opts?: { prefetch: true }): Promise<PlanOutput | null> {
    const startedMs = Date.now();
    // A script in the payload store: the turn's one call, as an inline script's turn carries it.
    const input = await scripts.withCall(raw);
    const planner = ctx.plannerFor(input.planner.kind);
    const llm = input.planner.kind !== 'scripted';
    // The tools this run may use (its list, plus spawn_agent when it may delegate: §7.14).
    const tools = scopedRegistry(registry, {
      tools: input.tools ?? null,
      spawnAgents: input.spawnAgents === true,
      askHuman: input.askHuman === true,
    });
    const store = llm ? conversations : null;
    const plannerInput: PlannerInput = {
      runId: input.runId,
      goal: input.goal,
      planner: input.planner,
      tools: tools.descriptors(),
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
      ...(input.nudge ? { nudge: input.nudge } : {}),
      ...(input.userText !== undefined ? { userText: input.userText } : {}),
      ...(input.resumeNote ? { resumeNote: input.resumeNote } : {}),
      ...(input.finalWord ? { finalWord: input.finalWord } : {}),
      ...(input.requestTimeoutMs ? { timeoutMs: input.requestTimeoutMs } : {}),
      ...(store ? { conversations: store } : {}),
      // Every model call of the turn is reserved under the run's tenant's spend limit first.
      ...(llm && ctx.spend
        ? { spend: spendAccess(ctx.spend, input.tenant ?? DEFAULT_TENANT, input.runId) }
        : {}),
    };
    const turnKey = llm && ctx.served ? activityTurnKey() : null;
    const served = turnKey && ctx.served ? ctx.served.turn(input.runId, turnKey, activityAttempt()) : null;
    const deadlineMs = attemptDeadlineMs(startedMs);
    const out = await plannerTurn(
      planner,
      deadlineMs !== undefined && llm ? { ...plannerInput, deadlineMs } : plannerInput,
      store,
      served,
    );
    const turn = out.turn;
    // A conversation learns which call finishes the run from the worker.
    const finishing = input.askHuman && tools.finishing ? { finishing: tools.finishing } : {};
    if (turn.type !== 'call') return { turn, memory: out.memory, proposal: null, ...finishing };

    if (input.planner.kind === 'scripted' && !input.planner.live) {
      // Script mode plays both planner and tools: fixture tools normalise as the replay does.
      const file = scriptOf(input);
      const n = normalizeCall(turn.tool, turn.args, fixtureArgsSpecs(file).get(turn.tool));
      const call = scriptCallAt(file.calls, turn.scriptIndex ?? -1);
      return {
        turn,
        memory: out.memory,
        proposal: {
          tool: turn.tool,
          args: turn.args,
          canonicalArgs: n.canonicalArgs,
          fingerprint: n.fingerprint,
          ...(n.similarKey ? { similarKey: n.similarKey } : {}),
          argsHash: sha256ArgsHash(turn.tool, n.canonicalArgs),
          operationKey: turn.operationKey ?? null,
          effect: file.tools?.[turn.tool]?.effect ?? 'read',
          rejection: null,
          ledger: null,
          fixture: { result: call?.result ?? null, progressVersion: call?.progressVersion ?? null },
        },
      };
    }
    const n = refuseForeignTools(tools.normalize(turn.tool, turn.args, turn.operationKey), tools);
    if (opts?.prefetch && !n.rejection && needsApproval(n)) return null;
    try {
      const proposal: ProposalInfo = {
        ...n,
        ledger: n.rejection ? null : await ledgerView(n, input.runId),
        fixture: null,
        approval: n.rejection ? null : await approvalView(n, input.runId, input.approvalStopRef ?? null),
      };
      // The proposal carries the args the tool gets; the turn's copy would only double them in history.
      const lean = llm ? { ...turn, args: null } : turn;
      return await largeArgsByReference(
        { turn: lean, memory: out.memory, proposal, ...finishing },
        input.runId,
      );
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

  /** Whether the worker's approval policy requires a person's approval for this call. */
  function needsApproval(n: NormalizedProposal): boolean {
    const tool = registry.get(n.tool);
    return tool !== undefined && approvalRequired(tool, n.args, approvalPolicy);
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
    if (!needsApproval(n)) return null;
    const q = { runId, fingerprint: n.fingerprint, argsHash: n.argsHash, stopRef, by: identity };
    const found = approvals ? await approvals.findUsable(q) : null;
    if (!found && approvals) {
      const args = JSON.stringify(redact(n.canonicalArgs));
      await approvals.request(runId, identity, `${n.fingerprint} ${n.tool} ${args}`);
    }
    return { required: true, approvalId: found?.id ?? null, stopRef: found ? stopRef : null };
  }

  return { plan, prefetchPlan };
}
