/**
 * The model's responses as a guarded OpenAI Agents run takes them in: each function call with a
 * call id of its own in the run, and the answer of a model call the guard did not let through.
 * agents-core skips an approved call whose id already has an output (`resolveInterruptedTurn`),
 * so under a reused id an approval given through the SDK's interruption would never run its
 * call. Workflow code.
 */
import type { ModelRequest, ModelResponse } from '@openai/agents-core';

/** The function call ids a run's conversation holds, and the renaming of a reused one. */
export class CallIds {
  private readonly ids = new Set<string>();

  /** `response` with each function call's id distinct from every id the run already holds (`<id>_2`, …). */
  distinct(request: ModelRequest, response: ModelResponse): ModelResponse {
    if (Array.isArray(request.input))
      for (const item of request.input) {
        const id = functionCallIdOf(item);
        if (id !== null) this.ids.add(id);
      }
    if (!Array.isArray(response.output)) return response;
    let renamed = false;
    const output = response.output.map((item) => {
      const id = functionCallIdOf(item);
      if (id === null) return item;
      if (!this.ids.has(id)) {
        this.ids.add(id);
        return item;
      }
      let n = 2;
      while (this.ids.has(`${id}_${n}`)) n++;
      const fresh = `${id}_${n}`;
      this.ids.add(fresh);
      renamed = true;
      return { ...item, callId: fresh };
    });
    return renamed ? { ...response, output } : response;
  }
}

/** What a model call the guard did not let through answers: the guard's note for `reason`, no usage. */
export function refusedResponse(reason: string): ModelResponse {
  return {
    usage: {
      requests: 0,
      inputTokens: 0,
      outputTokens: 0,
      totalTokens: 0,
      inputTokensDetails: [],
      outputTokensDetails: [],
    },
    output: [
      {
        type: 'message',
        id: `agent-loop-guard-${reason}`,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: `The run was stopped by the loop guard (${reason}).` }],
      },
    ],
  } as unknown as ModelResponse;
}

/** The call id of a function call item of the SDK's protocol, or null for any other item. */
function functionCallIdOf(item: unknown): string | null {
  const i = item as { type?: unknown; callId?: unknown } | null;
  return i !== null && typeof i === 'object' && i.type === 'function_call' && typeof i.callId === 'string'
    ? i.callId
    : null;
}
