/**
 * `agent-loop-guard/openai-agents`: the loop guard for an agent on Temporal's OpenAI
 * Agents SDK integration (`@temporalio/openai-agents`, `@openai/agents-core`), added inside the
 * user's workflow with a few lines and no rewrite:
 *
 * ```ts
 * const guard = guardOpenAIAgent(agent, { reads: ['lookup_order'], writes: { pay: { operationKey: (i) => `pay:${i.orderId}` } } });
 * guard.installHandlers(); // agentctl status / report / stop / resume / approve
 * const result = await guard.run(new TemporalOpenAIRunner(), prompt);
 * return guard.end(result?.finalOutput ?? null);
 * ```
 *
 * Every function tool of the agent and of its handoffs' agents (`tool()`, `activityAsTool`)
 * passes the same guard as an `agentRun` and an AI SDK agent (core/framework-guard.ts): the same rules, reasons, steering notes, StopReport, approvals and
 * handlers. A write runs as the user's activity wrapped by `ledgerWrites` on the worker, under
 * its operation key. The SDK's extension points carry it: each tool's `invoke` and
 * `needsApproval` are wrapped, the agent's `toolUseBehavior` ends the loop at a stop, the run
 * context's usage is charged to the budgets, and the model the runner resolved (its
 * `ActivityBackedModel`, reached through `callModelInputFilter`) is wrapped: each function call it
 * answers gets a call id of its own in the run, and with `spend` each call is reserved under the
 * tenant's spend limit first and settled at its usage after. Workflow code.
 */
// Types only: workflow code gets the SDK from the user's bundle, and `agent-loop-guard` loads no
// optional peer at load time (test/package/pack.test.ts); its classes are recognised by shape.
import type {
  Agent,
  CallModelInputFilter,
  Handoff,
  Model,
  ModelRequest,
  ModelResponse,
  RunState,
  FunctionTool,
  FunctionToolResult,
  RunContext,
  Tool,
  ToolsToFinalOutputResult,
  ToolUseBehavior,
} from '@openai/agents-core';
import { CallIds, refusedResponse } from './model-responses';
import { canonicalJson, GuardReason, TerminalState } from '../guard';
import { requestBytesOf } from '../common/price';
import type { ModelSpend } from '../core/budget-stops';
import { FrameworkGuard } from '../core/framework-guard';
import { GUARDED, type WriteRule } from '../core/framework-types';
import { openAIGuardError, type GuardedOpenAIAgent, type OpenAIGuardOptions } from './types';
import { declarationRefusal, setupRefusal } from '../core/guard-options';

export * from './types';

/** Any agent (the SDK's own generic bound for agents of any context and output). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyAgent = Agent<any, any>;

/**
 * Wraps every function tool of `agent` (and of its handoffs' agents, which share the run's
 * budgets) with the loop guard and the idempotency ledger (docs/openai-agents.md). Call it in
 * workflow code, once per agent loop; run the agent with the returned `run`.
 */
export function guardOpenAIAgent<TAgent extends AnyAgent>(
  agent: TAgent,
  options: OpenAIGuardOptions = {},
): GuardedOpenAIAgent<TAgent> {
  if (!isAgent(agent))
    throw openAIGuardError('invalid_option', 'guardOpenAIAgent takes an Agent of @openai/agents-core');
  const agents = agentsOf(agent);
  const tools = new Map<string, FunctionTool>();
  for (const a of agents) {
    for (const t of a.tools as Tool[]) {
      const name = (t as { name?: string }).name ?? String(t);
      if ((t as unknown as Record<symbol, unknown>)[GUARDED] === true)
        throw openAIGuardError(
          'already_guarded',
          `tool "${name}" of agent "${a.name}" is already guarded by agent-loop-guard: call guardOpenAIAgent once, with the original agent`,
        );
      if (t.type !== 'function')
        throw openAIGuardError(
          'unsupported_tool',
          `tool "${name}" of agent "${a.name}" is a ${t.type} tool: the guard sees only function tools (tool(), activityAsTool); hosted tools run where no wrapper sees their calls`,
        );
      const params = (t as FunctionTool).parameters as unknown;
      if (params === undefined || params === null || typeof params !== 'object')
        throw openAIGuardError(
          'no_parameters_schema',
          `tool "${name}" of agent "${a.name}" has no parameters schema: the guard fingerprints a call by its arguments`,
        );
      tools.set(t.name, t as FunctionTool);
    }
  }
  const reads = new Set(options.reads ?? []);
  const writes: Record<string, WriteRule> = {};
  for (const [name, rule] of Object.entries(options.writes ?? {})) {
    if (typeof rule?.operationKey !== 'function')
      throw openAIGuardError(
        'write_without_operation_key',
        `write tool "${name}" has no operation-key rule: give writes.${name} = { operationKey: (input) => string } (a write without a key could run twice)`,
      );
    writes[name] = { ...rule, activity: rule.activity ?? name };
  }
  const refusal =
    declarationRefusal('guardOpenAIAgent', tools.keys(), reads, writes) ??
    setupRefusal('guardOpenAIAgent', options);
  if (refusal) throw openAIGuardError(refusal.code, refusal.message);
  return new OpenAIAgentGuard(agent, agents, tools, reads, writes, options).api();
}

/** The agent and every agent reachable by its handoffs, once each. */
function agentsOf(root: AnyAgent): AnyAgent[] {
  const seen: AnyAgent[] = [];
  const visit = (a: AnyAgent) => {
    if (seen.includes(a)) return;
    seen.push(a);
    for (const h of a.handoffs ?? []) visit(isHandoff(h) ? h.agent : h);
  };
  visit(root);
  return seen;
}

const isAgent = (a: unknown): a is AnyAgent =>
  typeof a === 'object' &&
  a !== null &&
  typeof (a as AnyAgent).clone === 'function' &&
  Array.isArray((a as AnyAgent).tools);
const isHandoff = (h: unknown): h is Handoff =>
  typeof h === 'object' && h !== null && 'agent' in h && typeof (h as Handoff).toolName === 'string';
const isRunState = (s: unknown): s is RunState<unknown, AnyAgent> =>
  typeof s === 'object' &&
  s !== null &&
  typeof (s as RunState<unknown, AnyAgent>).getInterruptions === 'function';

const key = (tool: string, callId: string) => `${tool}\u0000${callId}`;

class OpenAIAgentGuard<TAgent extends AnyAgent> {
  private readonly host: FrameworkGuard;
  /** The tenant spend gate of the model calls (absent without `spend`). */
  private readonly spend: ModelSpend | undefined;
  private readonly charged = new WeakMap<object, { input: number; output: number }>();
  /**
   * SDK approvals (by tool name and call id) bound here to the arguments the person saw: the
   * interruptions a run returned, or the state it was given back. Used once.
   */
  private readonly sdkApproved = new Map<string, string>();
  private readonly guarded: TAgent;
  /** The models this guard wraps (each once): call ids made distinct, and the spend limit. */
  private readonly attended = new WeakSet<object>();
  /** Every function call id the run's conversation holds so far (the model's, or given here). */
  private readonly callIds = new CallIds();
  /** Set when a model call was refused (the run stopped): the SDK's error after it is the stop's. */
  private refused = false;

  constructor(
    agent: TAgent,
    agents: AnyAgent[],
    tools: Map<string, FunctionTool>,
    reads: Set<string>,
    writes: Record<string, WriteRule>,
    options: OpenAIGuardOptions,
  ) {
    this.host = new FrameworkGuard(writes, { ...options, writes });
    this.spend = this.host.modelSpend();
    // Each agent cloned once, its tools wrapped, its handoffs pointing at the clones.
    const clones = new Map<AnyAgent, AnyAgent>();
    for (const a of agents)
      clones.set(
        a,
        a.clone({
          tools: (a.tools as FunctionTool[]).map((t) => this.wrap(t)),
          toolUseBehavior: this.behaviour(a.toolUseBehavior),
        }),
      );
    for (const [a, c] of clones)
      c.handoffs = (a.handoffs ?? []).map((h) =>
        isHandoff(h) ? h.clone({ agent: clones.get(h.agent)! }) : clones.get(h)!,
      );
    this.guarded = clones.get(agent) as TAgent;
  }

  api(): GuardedOpenAIAgent<TAgent> {
    const own: Pick<GuardedOpenAIAgent<TAgent>, 'agent' | 'run'> = {
      agent: this.guarded,
      run: (runner, input, options) => this.run(runner, input, options),
    };
    // The core's views keep their getters (`stopped`, `executions`): the SDK's own go beside them.
    return Object.assign(this.host.loop(), own);
  }

  private wrap(t: FunctionTool): FunctionTool {
    const wrapped: FunctionTool = {
      ...t,
      invoke: (ctx, raw, details) => this.invoke(t, ctx, raw, details),
      needsApproval: (ctx, args, callId) => this.needsApproval(t, ctx, args, callId ?? ''),
    };
    Object.defineProperty(wrapped, GUARDED, { value: true, enumerable: false });
    return wrapped;
  }

  /** One call: usage charged, then the guarded step (before → run or write → after). */
  private async invoke(
    t: FunctionTool,
    ctx: RunContext,
    raw: string,
    details: Parameters<FunctionTool['invoke']>[2],
  ): Promise<unknown> {
    this.charge(ctx);
    let input: unknown;
    try {
      input = raw === '' ? {} : JSON.parse(raw);
    } catch {
      return t.invoke(ctx, raw, details); // the tool says how its input is malformed; nothing runs
    }
    try {
      const out = await this.host.call(t.name, input, details?.toolCall?.callId ?? '', () =>
        t.invoke(ctx, raw, details),
      );
      return typeof out === 'string' ? out : JSON.stringify(out ?? null);
    } catch (err) {
      // A failed call is the model's to read (the SDK's `tool()` convention), not a failed run;
      // a write's operation key keeps a re-planned call from running it twice.
      return `An error occurred while running the tool: ${err instanceof Error ? err.message : String(err)}`;
    }
  }

  /**
   * The tool's own `needsApproval`, honoured. The SDK keys an approval by tool name and call
   * id: a call it would let through on an approval given for other arguments than the ones the
   * person was shown has that approval withdrawn, so it waits for its own. (A twin the model
   * sends under an already used call id gets its own id first: `distinctCallIds`.)
   */
  private async needsApproval(
    t: FunctionTool,
    ctx: RunContext,
    args: unknown,
    callId: string,
  ): Promise<boolean> {
    if (!(await t.needsApproval(ctx, args as never, callId))) return false;
    if (ctx.isToolApproved({ toolName: t.name, callId }) !== true) return true;
    const k = key(t.name, callId);
    const bound = this.sdkApproved.get(k);
    this.sdkApproved.delete(k);
    if (bound !== undefined && bound === canonicalJson(args)) return true;
    const json = ctx.toJSON().approvals as Record<string, { approved: boolean | string[] }>;
    const entry = json[t.name];
    if (entry && Array.isArray(entry.approved)) {
      entry.approved = entry.approved.filter((id) => id !== callId);
      (ctx as unknown as { _rebuildApprovals(a: unknown): void })._rebuildApprovals(json);
    }
    return true;
  }

  /** The agent's `toolUseBehavior`, ending the SDK's loop after the step once the guard stopped. */
  private behaviour(original: ToolUseBehavior): ToolUseBehavior {
    return async (ctx: RunContext, results: FunctionToolResult[]): Promise<ToolsToFinalOutputResult> => {
      this.charge(ctx);
      const stop = this.host.stopped;
      if (stop)
        return {
          isFinalOutput: true,
          isInterrupted: undefined,
          finalOutput: `The run was stopped by the loop guard (${stop.reason}).`,
        };
      if (typeof original === 'function') return original(ctx, results);
      const first =
        original === 'stop_on_first_tool'
          ? results[0]
          : typeof original === 'object'
            ? results.find((r) => original.stopAtToolNames.includes(r.tool.name))
            : undefined;
      if (first?.type === 'function_output')
        return {
          isFinalOutput: true,
          isInterrupted: undefined,
          finalOutput: typeof first.output === 'string' ? first.output : (JSON.stringify(first.output) ?? ''),
        };
      return { isFinalOutput: false, isInterrupted: undefined };
    };
  }

  /** Charges the run's model usage not charged yet; past a budget the guard stops the run. */
  private charge(ctx: RunContext | undefined): void {
    const usage = ctx?.usage;
    if (!usage) return;
    const seen = this.charged.get(usage) ?? { input: 0, output: 0 };
    const input = usage.inputTokens - seen.input;
    const output = usage.outputTokens - seen.output;
    this.charged.set(usage, { input: usage.inputTokens, output: usage.outputTokens });
    if (input > 0 || output > 0) this.host.chargeTokens(input, output);
    // Also applies an operator's stop accepted since the last call.
    this.host.applyHeldStop();
  }

  private async run(
    runner: Parameters<GuardedOpenAIAgent<TAgent>['run']>[0],
    input: Parameters<GuardedOpenAIAgent<TAgent>['run']>[1],
    options: Parameters<GuardedOpenAIAgent<TAgent>['run']>[2] = {},
  ): ReturnType<GuardedOpenAIAgent<TAgent>['run']> {
    if (isRunState(input)) for (const item of input.getInterruptions()) this.bind(item.rawItem);
    const filter = options.callModelInputFilter;
    // Before each model call: its model attended (spend, distinct call ids), and the notes of
    // accepted resumes woven into its input (core/resume-note.ts), so a resumed model reads
    // what changed. Yours runs after.
    const attending: CallModelInputFilter = (args) => {
      this.attend(args.agent);
      const input = this.host.weaveResumeNotes(args.modelData.input, (text) => ({
        role: 'user' as const,
        content: text,
      }));
      const modelData =
        input.length === args.modelData.input.length ? args.modelData : { ...args.modelData, input };
      return filter ? filter({ ...args, modelData }) : modelData;
    };
    this.refused = false;
    let result;
    try {
      result = await runner.run(this.guarded, input as never, {
        ...options,
        callModelInputFilter: attending,
        runConfig: { traceIncludeSensitiveData: false, ...options.runConfig },
      });
    } catch (err) {
      // A refused model call answered the guard's note; an agent whose output is not text fails on it.
      if (this.refused) return null;
      if (!isMaxTurns(err)) throw err;
      this.host.stopWith(
        GuardReason.STEP_BUDGET,
        TerminalState.STOPPED_LOOP_GUARD,
        `the SDK's max turns (${options.maxTurns ?? 10}) were used up`,
      );
      return null;
    }
    this.charge((result.state as unknown as { _context?: RunContext })._context);
    for (const item of result.interruptions) this.bind(item.rawItem);
    return result as never;
  }

  /**
   * Wraps `agent`'s model (the runner's `ActivityBackedModel`, once per model) so that
   *
   * - each function call of a response has a call id of its own in the run: a call under an id
   *   the conversation already holds (a model that reuses one) gets `<id>_<n>` instead. The SDK
   *   keys an approval and a call's output by tool name and call id; it skips an approved call
   *   whose id already has an output (`resolveInterruptedTurn`), so under a reused id an approval
   *   given through the SDK's interruption would never run its call while the run completed.
   * - with `spend`, each call is reserved under the tenant spend limit at its worst case first
   *   (its instructions, input, tools and handoffs as UTF-8 JSON, plus its `maxTokens` or
   *   `spend.maxOutputTokens`) and settled at its usage after. A refused call (or one after the
   *   run stopped) does not reach the model: it answers the guard's note, so the SDK's loop ends
   *   with the run's history, and the StopReport says NEEDS_HUMAN `spend_limit` (core/budget-stops.ts).
   */
  private attend(agent: AnyAgent): void {
    const model = agent.model as Model | string | undefined;
    if (typeof model !== 'object' || model === null || typeof model.getResponse !== 'function') {
      throw openAIGuardError(
        'invalid_option',
        `agent ${agent.name}'s model is not one the runner resolved: run the guarded agent with TemporalOpenAIRunner`,
      );
    }
    if (this.attended.has(model)) return;
    this.attended.add(model);
    const name = (model as { modelName?: unknown }).modelName;
    const modelName = typeof name === 'string' && name ? name : agent.name;
    const call = model.getResponse.bind(model);
    const spend = this.spend;
    model.getResponse = async (request: ModelRequest): Promise<ModelResponse> => {
      // The run's budgets first: a stopped run, or one with nothing left, sends no request.
      if (!this.host.mayCallModel()) return this.refusedResponse();
      let ticket: Awaited<ReturnType<ModelSpend['before']>> | undefined;
      if (spend) {
        const bytes = requestBytesOf([
          request.systemInstructions ?? null,
          request.input,
          request.tools ?? [],
          request.handoffs ?? [],
        ]);
        ticket = await spend.before(modelName, bytes, request.modelSettings?.maxTokens ?? undefined);
        if (ticket === null) return this.refusedResponse();
      }
      const response = await call(request);
      if (spend && ticket) await spend.after(ticket, response.usage);
      return this.callIds.distinct(request, response);
    };
  }

  /** What a model call the guard did not let through answers (the run stopped): the guard's note. */
  private refusedResponse(): ModelResponse {
    this.refused = true;
    return refusedResponse(this.host.stopped?.reason ?? GuardReason.SPEND_LIMIT);
  }

  private bind(raw: unknown): void {
    const r = raw as { type?: string; name?: string; callId?: string; arguments?: string };
    if (r.type !== 'function_call' || !r.name || !r.callId) return;
    try {
      this.sdkApproved.set(key(r.name, r.callId), canonicalJson(JSON.parse(r.arguments || '{}')));
    } catch {
      // Unparseable arguments: nothing is bound, the call waits for an approval again.
    }
  }
}

/** The SDK's max-turns error, as `TemporalOpenAIRunner` rethrows it (an AgentsWorkflowError with it as cause). */
function isMaxTurns(err: unknown): boolean {
  for (let e = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++)
    if ((e as Error).name === 'MaxTurnsExceededError') return true;
  return false;
}
