/**
 * The model wrapper of the AI SDK guard (`guard.model(…)`, ai-sdk/agent-guard.ts): each
 * response's usage is charged as it arrives, before its tool calls are decided; and the
 * helpers that read an activity failure. Workflow code.
 */
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Usage } from '@ai-sdk/provider';
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { aiSdkGuardError, GUARDED } from './types';

/** `model`, charging each response's usage (`doGenerate`, and `doStream` at its `finish` part). */
export function chargingModel(
  model: LanguageModelV4,
  charge: (usage: LanguageModelV4Usage | undefined) => void,
): LanguageModelV4 {
  if ((model as unknown as Record<symbol, unknown>)[GUARDED] === true) {
    throw aiSdkGuardError('already_guarded', 'this model is already wrapped by guard.model');
  }
  const wrapped: LanguageModelV4 = Object.create(model) as LanguageModelV4;
  Object.defineProperty(wrapped, GUARDED, { value: true, enumerable: false });
  Object.assign(wrapped, {
    doGenerate: async (o: LanguageModelV4CallOptions) => {
      const r = await model.doGenerate(o);
      charge(r.usage);
      return r;
    },
    doStream: async (o: LanguageModelV4CallOptions) => {
      const r = await model.doStream(o);
      const stream = r.stream.pipeThrough(
        new TransformStream({
          transform(part, controller) {
            if (part.type === 'finish') charge(part.usage);
            controller.enqueue(part);
          },
        }),
      );
      return { ...r, stream };
    },
  });
  return wrapped;
}

/** The failure's code when it is the write's final word (a non-retryable activity failure). */
export function failureCode(err: unknown): string | null {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.nonRetryable) {
    return err.cause.type ?? 'fatal';
  }
  return null;
}

/** The innermost message of a failure. */
export function errorMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}
