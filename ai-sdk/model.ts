/**
 * The model wrapper of the AI SDK guard (`guard.model(…)`, ai-sdk/agent-guard.ts): each
 * response's usage is charged as it arrives, before its tool calls are decided. Workflow code.
 */
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from '@ai-sdk/provider';
import type { ResumeNotes } from '../core/resume-note';
import { aiSdkGuardError, GUARDED } from './types';

/**
 * What runs around each model call besides the charge (the tenant spend gate): `before` answers
 * a ticket, or null when the model must not be called (then the call answers nothing, with
 * `finishReason` `other`, and the loop ends on the guard's stop); `after` settles the ticket.
 */
export interface CallHooks<T> {
  before(modelId: string, o: LanguageModelV4CallOptions): Promise<T | null>;
  after(ticket: T, usage: LanguageModelV4Usage | undefined): Promise<void>;
}

const NO_USAGE: LanguageModelV4Usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};
const NOT_CALLED = { unified: 'other', raw: 'agent-loop-guard: not called' } as const;

/**
 * `model`, charging each response's usage (`doGenerate`, and `doStream` at its `finish` part).
 * `prepare` may change each call's options first (the guard weaves a resume's note into the
 * prompt: core/resume-note.ts). `mayCall` is asked before each call (the run's budgets:
 * core/model-gate.ts); false: the model is not called and the call answers nothing.
 */
export function chargingModel<T>(
  model: LanguageModelV4,
  charge: (usage: LanguageModelV4Usage | undefined) => void,
  hooks?: CallHooks<T>,
  prepare: (o: LanguageModelV4CallOptions) => LanguageModelV4CallOptions = (o) => o,
  mayCall: () => boolean = () => true,
): LanguageModelV4 {
  if ((model as unknown as Record<symbol, unknown>)[GUARDED] === true) {
    throw aiSdkGuardError('already_guarded', 'this model is already wrapped by guard.model');
  }
  const wrapped: LanguageModelV4 = Object.create(model) as LanguageModelV4;
  Object.defineProperty(wrapped, GUARDED, { value: true, enumerable: false });
  Object.assign(wrapped, {
    doGenerate: async (given: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> => {
      const o = prepare(given);
      if (!mayCall()) return { content: [], finishReason: NOT_CALLED, usage: NO_USAGE, warnings: [] };
      const ticket = hooks ? await hooks.before(model.modelId, o) : null;
      if (hooks && ticket === null)
        return { content: [], finishReason: NOT_CALLED, usage: NO_USAGE, warnings: [] };
      const r = await model.doGenerate(o);
      charge(r.usage);
      if (hooks) await hooks.after(ticket as T, r.usage);
      return r;
    },
    doStream: async (given: LanguageModelV4CallOptions) => {
      const o = prepare(given);
      const allowed = mayCall();
      const ticket = allowed && hooks ? await hooks.before(model.modelId, o) : null;
      if (!allowed || (hooks && ticket === null)) {
        const parts: LanguageModelV4StreamPart[] = [
          { type: 'stream-start', warnings: [] },
          { type: 'finish', usage: NO_USAGE, finishReason: NOT_CALLED },
        ];
        return {
          stream: new ReadableStream<LanguageModelV4StreamPart>({
            start(c) {
              for (const p of parts) c.enqueue(p);
              c.close();
            },
          }),
        };
      }
      const r = await model.doStream(o);
      let usage: LanguageModelV4Usage | undefined;
      const stream = r.stream.pipeThrough(
        new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
          transform(part, controller) {
            if (part.type === 'finish') {
              usage = part.usage;
              charge(part.usage);
            }
            controller.enqueue(part);
          },
          async flush() {
            if (hooks) await hooks.after(ticket as T, usage);
          },
        }),
      );
      return { ...r, stream };
    },
  });
  return wrapped;
}

/**
 * Each call's options with the notes of the accepted resumes woven into its prompt as user
 * messages (core/resume-note.ts): a resumed model reads what changed before it goes on.
 */
export function withResumeNotes(
  notes: ResumeNotes,
): (o: LanguageModelV4CallOptions) => LanguageModelV4CallOptions {
  return (o) => (notes.any ? { ...o, prompt: notes.weave(o.prompt, userText) } : o);
}

/** A prompt message of the runtime's own text. */
const userText = (text: string): LanguageModelV4Prompt[number] => ({
  role: 'user',
  content: [{ type: 'text', text }],
});
