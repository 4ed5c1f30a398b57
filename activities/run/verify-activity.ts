/**
 * The activities that judge whether a stopped run may go on: `verifyPrecondition` (re-check
 * external state before a resume), `currentProgress` (the progress version at start) and
 * `checkPlanner` (the lift rule of a `planner_failed` stop).
 */
import type { Planner } from '../../common/planner';
import { isPayloadRef } from '../../common/payload-limits';
import { redact, redactText } from '../../common/redact';
import { boundedObservation, type ResumeObservation } from '../../core/resume-note';
import type { ToolResult } from '../../guard';
import { resolvePayloadRefs } from '../../storage/payloads';
import { readVersion } from '../progress';
import type { AnyTool } from '../../tools/define-tool';
import type { PlanInput, RunToolInput, VerifyInput, VerifyOutput } from '../types';
import type { ActivityContext } from './context';
import { NO_STORE_TX } from '../../tools/store';
import { refusalAuditor } from '../../storage/approvals/refusal-audit';
import { unknownToolOf } from '../../tools/registry';
import { runRead, versionNow } from './tool-call';
import { sharedLift } from '../lift-rules';

/** The verification activities over the worker's context. */
export function createVerifyActivity(ctx: ActivityContext) {
  const { registry, ledger, store, progress, operators, approvals, payloads } = ctx;

  /** Re-verifies, from external state, that what stopped a run has changed. */
  async function verifyPrecondition(raw: VerifyInput): Promise<VerifyOutput> {
    const input = isPayloadRef(raw.blockedArgs)
      ? { ...raw, blockedArgs: await resolvePayloadRefs(payloads, raw.runId, raw.blockedArgs) }
      : raw;
    const version = await versionNow(ctx, input.runId);
    // The rules every engine shares (approval, spend limit, a lost write outcome): one place.
    const shared = await sharedLift(
      input,
      { ledger, approvals: approvals ?? null, spend: ctx.spend, signed: !operators.isOpen },
      () => registry.normalize(input.blockedTool ?? '', input.blockedArgs, input.operationKey).argsHash,
    );
    if (shared) return { changed: shared.changed, progressVersion: version, detail: shared.detail };
    const tool = input.blockedTool ? registry.get(input.blockedTool) : undefined;
    if (input.blockedTool && unknownToolOf(input.unmet) === input.blockedTool) {
      // The run stopped on a tool this worker did not have: a change of the worker lifts it,
      // and this worker's tool set is what is checked.
      return {
        changed: tool !== undefined,
        progressVersion: version,
        detail: tool
          ? `tool ${tool.name} is registered on this worker now`
          : `this worker still has no tool named "${input.blockedTool}" (it has: ${registry.names().join(', ')}); add it to the worker's tools, restart the worker, then resume`,
      };
    }
    if (tool?.checkPrecondition && input.blockedArgs !== undefined && input.blockedArgs !== null) {
      const parsed = tool.schema.safeParse(input.blockedArgs);
      if (parsed.success) {
        const unmet = await tool.checkPrecondition(parsed.data, store?.tx ?? NO_STORE_TX);
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
    let observed: ResumeObservation | undefined;
    if (now <= input.checkpointProgressVersion && tool?.effect === 'read' && progress.observe) {
      // Nothing moved the source yet, and the stop was on a read: reads are safe to repeat, so
      // run it again and let the source judge its result (new content is progress). Its result
      // is what the model is told with the resume: the blocked call's observation.
      const again = await rerunRead(tool, input);
      if (again !== null && again.progressVersion !== null) {
        now = again.progressVersion;
        reran = ` (re-ran ${tool.name})`;
        observed = { tool: tool.name, args: redact(again.args), result: boundedObservation(again.result) };
      }
    }
    const changed = now > input.checkpointProgressVersion;
    return {
      changed,
      progressVersion: now,
      detail: changed
        ? `external state moved from version ${input.checkpointProgressVersion} to ${now}${reran}`
        : `external state unchanged at version ${now}${reran}`,
      ...(changed && observed ? { observed } : {}),
    };
  }

  /** Runs a stopped read once more for resume verification; its result and version after, or null if it could not run. */
  async function rerunRead(
    tool: AnyTool,
    input: VerifyInput,
  ): Promise<{ args: unknown; result: ToolResult; progressVersion: number | null } | null> {
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
    return { args: parsed.data, ...(await runRead(ctx, tool, call)) };
  }

  /** The run's progress version now (at start, for initialProgressVersion). */
  async function currentProgress(runId: string): Promise<number> {
    // Retried until it answers (an outage delays the first step; it never fails the run).
    return readVersion(progress, runId);
  }

  /** Whether the planner answers now (the lift rule of a `planner_failed` stop). */
  async function checkPlanner(
    input: Pick<PlanInput, 'runId' | 'planner'>,
  ): Promise<{ ok: boolean; detail: string }> {
    let planner: Planner;
    try {
      planner = ctx.plannerFor(input.planner.kind);
    } catch (err) {
      return { ok: false, detail: (err as Error).message };
    }
    if (!planner.health) return { ok: true, detail: `planner ${input.planner.kind} is configured` };
    const problem = await planner.health(input.planner);
    return problem === null
      ? { ok: true, detail: `planner ${input.planner.kind} answered its health check` }
      : { ok: false, detail: `planner ${input.planner.kind} still failing: ${redactText(problem)}` };
  }

  /** The gate's audit of a refusal it decided (core/gate.ts): one `refused` row each. */
  const auditRefusal = refusalAuditor(() => approvals ?? null);

  return { verifyPrecondition, currentProgress, checkPlanner, auditRefusal };
}
