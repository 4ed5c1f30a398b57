/**
 * The guard of one AI SDK agent loop (ai-sdk/index.ts's `guardAgent`): the core's framework
 * guard (core/framework-guard.ts: each tool call one guarded step, the approval wait, the budget
 * and spend stops, the views) with what the AI SDK forces on it: the guarded `ToolSet` whose
 * tools' `execute` go through the guard, `stopWhen` (which charges each step's usage when the
 * model is not wrapped), and `guard.model` for a LanguageModelV4 (ai-sdk/model.ts). Workflow code.
 */
import type { LanguageModelV4Usage } from '@ai-sdk/provider';
import type { ToolExecutionOptions, ToolSet } from 'ai';
import { requestBytesOf } from '../common/price';
import type { FrameworkGuard } from '../core/framework-guard';
import type { GatedReservation } from '../core/spend-gate';
import { chargingModel, withResumeNotes, type CallHooks } from './model';
import { GUARDED, type GuardedAgent } from './types';

/** The tenant spend gate (core/budget-stops.ts `modelSpend`) around an AI SDK model's calls. */
function spendHooks(guard: FrameworkGuard): CallHooks<GatedReservation> | undefined {
  const spend = guard.modelSpend();
  if (!spend) return undefined;
  return {
    before: (modelId, call) =>
      spend.before(modelId, requestBytesOf([call.prompt, call.tools ?? []]), call.maxOutputTokens),
    after: (r, usage) =>
      spend.after(
        r,
        usage && { inputTokens: usage.inputTokens.total, outputTokens: usage.outputTokens.total },
      ),
  };
}

/** Charges a model response's usage; past a budget the run stops at once. */
function charge(guard: FrameworkGuard, usage: LanguageModelV4Usage | undefined): void {
  if (usage) guard.chargeTokens(usage.inputTokens.total ?? 0, usage.outputTokens.total ?? 0);
}

/** `tools` guarded by `guard`, with the AI SDK's `stopWhen` and `model` beside the core's views. */
export function aiSdkAgent<TOOLS extends ToolSet>(guard: FrameworkGuard, tools: TOOLS): GuardedAgent<TOOLS> {
  const wrapped: Record<string, unknown> = {};
  for (const [name, t] of Object.entries(tools)) {
    const original = t as { execute?: (input: unknown, o: ToolExecutionOptions<unknown>) => unknown };
    const copy: Record<string | symbol, unknown> = {
      ...t,
      execute: (input: unknown, o: ToolExecutionOptions<unknown>) =>
        guard.call(
          name,
          input,
          o.toolCallId,
          original.execute ? () => original.execute!.call(t, input, o) : undefined,
        ),
    };
    Object.defineProperty(copy, GUARDED, { value: true, enumerable: false });
    wrapped[name] = copy;
  }
  Object.defineProperty(wrapped, GUARDED, { value: true, enumerable: false });
  /** Whether `model` wrapped the model (then usage is counted there, not in stopWhen). */
  let modelWrapped = false;
  let stepsCharged = 0;
  const own: Pick<GuardedAgent<TOOLS>, 'tools' | 'stopWhen' | 'model'> = {
    tools: wrapped as TOOLS,
    stopWhen: ({ steps }) => {
      if (!modelWrapped) {
        for (const step of steps.slice(stepsCharged))
          guard.chargeTokens(step.usage?.inputTokens ?? 0, step.usage?.outputTokens ?? 0);
        stepsCharged = steps.length;
      }
      return guard.applyHeldStop();
    },
    model: (m) => {
      const model = chargingModel(
        m,
        (u) => charge(guard, u),
        spendHooks(guard),
        withResumeNotes(guard.resumeNotes),
        () => guard.mayCallModel(),
      );
      modelWrapped = true;
      return model;
    },
  };
  // The core's views keep their getters (`stopped`, `executions`): the AI SDK's own go beside them.
  return Object.assign(guard.loop(), own);
}
