/**
 * A scripted model: a local HTTP server speaking OpenAI Chat Completions whose replies are
 * written by the test, either turn by turn (a list, one entry per model request) or as a
 * function of the conversation it is sent. A worker reaches it as it reaches a real model:
 * through a named endpoint (`AGENT_MODEL_ENDPOINTS`), with the `openai` planner and the
 * official `openai` SDK, so the code under test is the worker's own, unchanged; only the
 * model's answers are scripted. It is also the stand-in model `agentctl init` writes.
 *
 * It sits on {@link startOpenAIServer} (openai-server.ts), which answers in the API's own
 * shapes and refuses, as the real API does, a conversation that breaks the tool protocol.
 */
import { startOpenAIServer, type OpenAIStep } from './openai-server';

/** A message of the conversation as the model receives it (OpenAI Chat Completions). */
export interface ChatMessage {
  readonly role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | string;
  /** The text (a tool message: the tool's result as JSON text); null on a tool-calling turn. */
  readonly content?: string | null | readonly { readonly type: string; readonly text?: string }[];
  readonly tool_calls?: readonly {
    readonly id: string;
    readonly type: 'function';
    readonly function: { readonly name: string; readonly arguments: string };
  }[];
  /** On a `tool` message: the call it answers. */
  readonly tool_call_id?: string;
}

/** One call the model proposes: a tool of the worker and its arguments. */
export interface ScriptedCall {
  readonly tool: string;
  readonly args?: Readonly<Record<string, unknown>>;
}

/**
 * What the model answers on one turn:
 *  - `{ tool, args }`: one tool call (`{ tool: 'complete_task', args: { summary } }` finishes a run);
 *  - `{ calls: [...] }`: several tool calls in one reply;
 *  - `{ text }`: a text reply (a final answer in chat terms; an agent run asks again);
 *  - `{ error: { status, message } }`: the API fails that request (429 and 5xx are retried,
 *    another 4xx stops the run `planner_failed`).
 */
export type ScriptedTurn =
  | (ScriptedCall & { readonly text?: string })
  | { readonly calls: readonly ScriptedCall[]; readonly text?: string }
  | { readonly text: string }
  | { readonly error: { readonly status: number; readonly message: string; readonly type?: string } };

/** The script: one turn per model request, in order; or the next turn from the conversation. */
export type ModelScript =
  readonly ScriptedTurn[] | ((messages: readonly ChatMessage[], turn: number) => ScriptedTurn);

/** Options of {@link startScriptedModel}. */
export interface ScriptedModelOptions {
  /** Each reply waits this long, ms (a real model's pace: time to stop a run in between). */
  readonly delayMs?: number;
  /** When set, a request without `Authorization: Bearer <apiKey>` gets a 401. */
  readonly apiKey?: string;
}

/** A running scripted model. */
export interface ScriptedModel {
  /** The endpoint's `baseURL` (`http://127.0.0.1:PORT/v1`). */
  readonly baseURL: string;
  /** The conversation of each request the model answered, in order. */
  conversations(): ChatMessage[][];
  /** The tools each request offered, by name. */
  offeredTools(): string[][];
  /** How many requests it answered. */
  readonly turns: number;
  close(): Promise<void>;
}

/** Why a turn is not one the model can give; null when it is. */
function turnProblem(turn: unknown): string | null {
  if (!turn || typeof turn !== 'object') return `a turn must be an object, got ${JSON.stringify(turn)}`;
  const t = turn as Record<string, unknown>;
  if ('error' in t) {
    const e = t.error as Record<string, unknown> | null;
    return e && typeof e.status === 'number' && typeof e.message === 'string'
      ? null
      : 'an error turn needs { error: { status: number, message: string } }';
  }
  const calls = 'calls' in t ? t.calls : 'tool' in t ? [t] : [];
  if (!Array.isArray(calls)) return '`calls` must be a list of { tool, args }';
  for (const c of calls as Record<string, unknown>[]) {
    if (typeof c?.tool !== 'string' || c.tool === '') return 'a call needs a tool name (`tool`)';
    if (c.args !== undefined && (typeof c.args !== 'object' || c.args === null || Array.isArray(c.args)))
      return `the args of ${c.tool} must be an object`;
  }
  if (calls.length === 0 && typeof t.text !== 'string')
    return 'a turn is { tool, args }, { calls }, { text } or { error }';
  return null;
}

/** The OpenAI reply of a turn. */
function stepOf(turn: ScriptedTurn): OpenAIStep {
  if ('error' in turn)
    return {
      error: {
        status: turn.error.status,
        type: turn.error.type ?? 'server_error',
        message: turn.error.message,
      },
    };
  const calls: readonly ScriptedCall[] = 'calls' in turn ? turn.calls : 'tool' in turn ? [turn] : [];
  return {
    content: turn.text ?? null,
    tool_calls: calls.map((c) => ({ name: c.tool, arguments: JSON.stringify(c.args ?? {}) })),
  };
}

/** The refusal of a request the script cannot answer: a 400, so the run stops at once, saying why. */
function scriptError(message: string): OpenAIStep {
  return { error: { status: 400, type: 'invalid_request_error', message: `scripted model: ${message}` } };
}

/**
 * Starts a scripted model. A list that runs out, or a turn that is not one (a typo in the
 * script), answers the request with a 400 naming the problem: the run stops
 * `planner_failed` with that message in its report, instead of hanging on retries.
 * A list is checked whole before the server starts (a TypeError naming the bad turn).
 */
export async function startScriptedModel(
  script: ModelScript,
  options: ScriptedModelOptions = {},
): Promise<ScriptedModel> {
  if (typeof script !== 'function') {
    if (!Array.isArray(script))
      throw new TypeError(
        'startScriptedModel: the script is a list of turns or a function of the conversation',
      );
    script.forEach((turn, i) => {
      const problem = turnProblem(turn);
      if (problem) throw new TypeError(`startScriptedModel: turn ${i}: ${problem}`);
    });
  }
  const server = await startOpenAIServer(
    (index, req) => {
      const messages = ((req.body as { messages?: ChatMessage[] }).messages ?? []) as ChatMessage[];
      let turn: unknown;
      if (typeof script === 'function') {
        try {
          turn = script(messages, index);
        } catch (err) {
          return scriptError(`the script function threw on turn ${index}: ${(err as Error).message}`);
        }
      } else {
        turn = script[index];
        if (turn === undefined)
          return scriptError(
            `the script has ${script.length} turns and the model was asked for turn ${index + 1} (end it with complete_task, or add turns)`,
          );
      }
      const problem = turnProblem(turn);
      return problem ? scriptError(`turn ${index}: ${problem}`) : stepOf(turn as ScriptedTurn);
    },
    {
      ...(options.apiKey ? { apiKey: options.apiKey } : {}),
      ...(options.delayMs ? { delayMs: options.delayMs } : {}),
    },
  );
  return {
    baseURL: server.baseURL,
    conversations: () =>
      server.completionRequests().map((r) => [...((r.messages as ChatMessage[] | undefined) ?? [])]),
    offeredTools: () =>
      server
        .completionRequests()
        .map((r) =>
          ((r.tools as { function: { name: string } }[] | undefined) ?? []).map((t) => t.function.name),
        ),
    get turns() {
      return server.completionRequests().length;
    },
    close: () => server.close(),
  };
}
