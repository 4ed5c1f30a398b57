/**
 * `agent-loop-guard/strands-agents`: the loop guard for an agent on Temporal's Strands Agents
 * integration (`@temporalio/strands-agents`, `@strands-agents/sdk`), added inside the user's
 * workflow with a few lines and no rewrite:
 *
 * ```ts
 * const agent = new TemporalAgent({ model: 'openai', tools: [workflow.activityAsTool('pay', { inputSchema })] });
 * const guard = guardStrandsAgent(agent, { reads: ['readDoc'], writes: { pay: { operationKey: (i) => `pay:${i.orderId}` } } });
 * guard.installHandlers(); // agentctl status / report / trace / stop / resume / approvals
 * const result = await guard.run(prompt);
 * return guard.end(String(result));
 * ```
 *
 * Every tool of the agent passes the same guard as an `agentRun`, an AI SDK and an OpenAI
 * Agents agent (core/framework-guard.ts): the same rules, reasons, steering notes, StopReport,
 * approvals and handlers. A write runs as the user's activity wrapped by `ledgerWrites` on the
 * worker, under its operation key. The SDK's extension points carry it: each tool in the agent's
 * registry is replaced by its guarded twin (a `Tool` by shape), and the agent's model's `stream`
 * is gated (strands-agents/model.ts). Workflow code.
 */
// Types only: workflow code gets the SDK from the user's bundle, and `agent-loop-guard` loads no
// optional peer at load time (test/package/pack.test.ts); its classes are recognised by shape.
import type {
  AgentResult,
  InvokeArgs,
  InvokeOptions,
  Model,
  Tool,
  ToolContext,
  ToolResultBlock,
  ToolStreamGenerator,
} from '@strands-agents/sdk';
import { GuardReason, TerminalState } from '../guard';
import { FrameworkGuard } from '../core/framework-guard';
import { GUARDED, type WriteRule } from '../core/framework-types';
import { declarationRefusal, setupRefusal } from '../core/guard-options';
import { gateModel, messageClassOf } from './model';
import { strandsGuardError, type GuardedStrandsAgent, type StrandsGuardOptions } from './types';

export * from './types';

/** A Strands agent as the guard sees it (the SDK's `Agent`, or the integration's `TemporalAgent`). */
interface StrandsAgent {
  readonly name: string;
  model: Model;
  readonly toolRegistry: { list(): Tool[]; addOrReplace(tools: Tool[]): void };
  invoke(args: InvokeArgs, options?: InvokeOptions): Promise<AgentResult>;
}

const isAgent = (a: unknown): a is StrandsAgent =>
  typeof a === 'object' &&
  a !== null &&
  typeof (a as StrandsAgent).invoke === 'function' &&
  typeof (a as StrandsAgent).toolRegistry?.list === 'function' &&
  typeof (a as StrandsAgent).toolRegistry?.addOrReplace === 'function';

const marked = (o: unknown): boolean => (o as Record<symbol, unknown> | null)?.[GUARDED] === true;

/**
 * Whether a tool was given an input schema. The SDK gives a tool without one exactly
 * `{ type: 'object', properties: {} }`; a schema the user wrote says more (its properties, or for
 * a tool without arguments `z.object({})`'s `additionalProperties: false`), so only that bare
 * default is refused.
 */
function hasInputSchema(t: Tool): boolean {
  const schema = t.toolSpec?.inputSchema as Record<string, unknown> | undefined;
  if (typeof schema !== 'object' || schema === null) return false;
  const properties = schema.properties;
  const bareDefault =
    Object.keys(schema).every((k) => k === 'type' || k === 'properties') &&
    typeof properties === 'object' &&
    properties !== null &&
    Object.keys(properties).length === 0;
  return !bareDefault;
}

/**
 * Guards every tool of `agent` with the loop guard and the idempotency ledger, and gates its
 * model (docs/strands-agents.md). Call it in workflow code, once per agent; run the agent with
 * the returned `run`.
 */
export function guardStrandsAgent<TAgent extends object>(
  agent: TAgent,
  options: StrandsGuardOptions = {},
): GuardedStrandsAgent<TAgent> {
  if (!isAgent(agent))
    throw strandsGuardError(
      'invalid_option',
      'guardStrandsAgent takes an Agent of @strands-agents/sdk (a TemporalAgent of @temporalio/strands-agents)',
    );
  if (marked(agent))
    throw strandsGuardError(
      'already_guarded',
      `agent "${agent.name}" is already guarded by agent-loop-guard: call guardStrandsAgent once per agent`,
    );
  const mcp = (agent as { _mcpClients?: unknown[] })._mcpClients;
  if (Array.isArray(mcp) && mcp.length > 0)
    throw strandsGuardError(
      'unsupported_tool',
      `agent "${agent.name}" has MCP clients: their tools join the agent at its first invoke, after the guard, where no wrapper sees their calls; give those tools as activityAsTool tools instead`,
    );
  const tools = new Map<string, Tool>();
  for (const t of agent.toolRegistry.list()) {
    if (marked(t))
      throw strandsGuardError(
        'already_guarded',
        `tool "${t.name}" is already guarded by agent-loop-guard: give each agent the original tools`,
      );
    if (!hasInputSchema(t))
      throw strandsGuardError(
        'no_input_schema',
        `tool "${t.name}" has no input schema: give it one (activityAsTool(name, { inputSchema: z.object({...}) }), z.object({}) for a tool without arguments); the guard fingerprints a call by its arguments`,
      );
    tools.set(t.name, t);
  }
  const reads = new Set(options.reads ?? []);
  const writes: Record<string, WriteRule> = {};
  for (const [name, rule] of Object.entries(options.writes ?? {})) {
    if (typeof rule?.operationKey !== 'function')
      throw strandsGuardError(
        'write_without_operation_key',
        `write tool "${name}" has no operation-key rule: give writes.${name} = { operationKey: (input) => string } (a write without a key could run twice)`,
      );
    const dispatched = (tools.get(name) as { activityName?: unknown } | undefined)?.activityName;
    writes[name] = {
      ...rule,
      activity: rule.activity ?? (typeof dispatched === 'string' ? dispatched : name),
    };
  }
  const refusal =
    declarationRefusal('guardStrandsAgent', tools.keys(), reads, writes) ??
    setupRefusal('guardStrandsAgent', options);
  if (refusal) throw strandsGuardError(refusal.code, refusal.message);
  return new StrandsAgentGuard(agent, tools, writes, options).api() as GuardedStrandsAgent<TAgent>;
}

/** The content a tool result carries for `value`: text as text, anything else as JSON. */
const contentOf = (value: unknown) =>
  typeof value === 'string' ? { text: value } : { json: (value ?? null) as object };

/** What a tool result block carries, as one value (the text, or the JSON, of its one item). */
function valueOf(block: ToolResultBlock): unknown {
  const items = block.content as unknown as Array<{ type?: string; text?: string; json?: unknown }>;
  if (items.length === 1 && items[0]!.type === 'textBlock') return items[0]!.text;
  if (items.length === 1 && items[0]!.type === 'jsonBlock') return items[0]!.json;
  return JSON.parse(JSON.stringify(items)) as unknown;
}

/** The error a tool result block of status `error` says. */
function errorOf(block: ToolResultBlock): Error {
  if (block.error instanceof Error) return block.error;
  const text = valueOf(block);
  return new Error(typeof text === 'string' ? text : JSON.stringify(text));
}

class StrandsAgentGuard {
  private readonly host: FrameworkGuard;

  constructor(
    private readonly agent: StrandsAgent,
    tools: Map<string, Tool>,
    writes: Record<string, WriteRule>,
    options: StrandsGuardOptions,
  ) {
    this.host = new FrameworkGuard(writes, { ...options, writes });
    const name = (agent.model as unknown as { modelName?: unknown }).modelName;
    gateModel(agent.model, typeof name === 'string' && name ? name : agent.name, this.host);
    agent.toolRegistry.addOrReplace([...tools.values()].map((t) => this.wrap(t)));
    Object.defineProperty(agent, GUARDED, { value: true, enumerable: false });
  }

  api(): GuardedStrandsAgent<StrandsAgent> {
    const own: Pick<GuardedStrandsAgent<StrandsAgent>, 'agent' | 'run'> = {
      agent: this.agent,
      run: (input, options) => this.run(input, options),
    };
    // The core's views keep their getters (`stopped`, `executions`): the SDK's own go beside them.
    return Object.assign(this.host.loop(), own);
  }

  /** `t`'s guarded twin: the same name, description and spec; its calls through the guarded step. */
  private wrap(t: Tool): Tool {
    const host = this.host;
    const wrapped = {
      name: t.name,
      description: t.description,
      toolSpec: t.toolSpec,
      async *stream(ctx: ToolContext): ToolStreamGenerator {
        const { toolUseId, input } = ctx.toolUse;
        let own: ToolResultBlock | undefined;
        let ownValue: unknown;
        // A read runs the tool itself (its activity, its own result block); a write runs as the
        // ledger-wrapped activity the host schedules, never through the tool.
        const execute = async (): Promise<unknown> => {
          const gen = t.stream(ctx);
          let next = await gen.next();
          while (!next.done) next = await gen.next();
          own = next.value;
          if (own.status === 'error') throw errorOf(own);
          ownValue = valueOf(own);
          return ownValue;
        };
        try {
          const out = await host.call(t.name, input, toolUseId, execute);
          if (own && out === ownValue) return own;
          return resultBlock(ctx, toolUseId, 'success', out);
        } catch (err) {
          // The SDK's interrupt from the tool itself halts the loop, as without the guard.
          if ((err as Error)?.name === 'InterruptError') throw err;
          if (own?.status === 'error') return own;
          // A failed call is the model's to read (the SDK's convention), not a failed run;
          // a write's operation key keeps a re-planned call from running it twice.
          return resultBlock(ctx, toolUseId, 'error', err instanceof Error ? err.message : String(err));
        }
      },
    };
    Object.defineProperty(wrapped, GUARDED, { value: true, enumerable: false });
    return wrapped as unknown as Tool;
  }

  private async run(input: InvokeArgs, options?: InvokeOptions): Promise<AgentResult | null> {
    this.host.applyHeldStop();
    let result: AgentResult;
    try {
      result = await this.agent.invoke(input, options);
    } catch (err) {
      // The model activity failed for good (its retries used up): the SDK rethrows it as a plain
      // error, which would fail the workflow task and retry it forever. It is a stop instead,
      // NEEDS_HUMAN `planner_failed` as an agentRun's, resumable once the model answers again.
      const failure = activityFailureIn(err);
      if (failure === null) throw err;
      this.host.stopWith(
        GuardReason.PLANNER_FAILED,
        TerminalState.NEEDS_HUMAN,
        `the model call failed after its activity's retries: ${failure}`,
      );
      return null;
    }
    const limits = options?.limits;
    if (result.stopReason === 'limitTurns')
      this.host.stopWith(
        GuardReason.STEP_BUDGET,
        TerminalState.STOPPED_LOOP_GUARD,
        `the SDK's turn limit (limits.turns ${limits?.turns ?? '?'}) was used up`,
      );
    else if (result.stopReason === 'limitTotalTokens' || result.stopReason === 'limitOutputTokens')
      this.host.stopWith(
        GuardReason.TOKEN_BUDGET,
        TerminalState.STOPPED_LOOP_GUARD,
        `the SDK's token limit (limits.${result.stopReason === 'limitTotalTokens' ? 'totalTokens' : 'outputTokens'}) was used up`,
      );
    return result;
  }
}

/** The message of the Temporal activity failure `err` carries (a model activity's), or null. */
function activityFailureIn(err: unknown): string | null {
  for (let e = err, i = 0; e && i < 6; e = (e as { cause?: unknown }).cause, i++)
    if ((e as Error).name === 'ActivityFailure') {
      const cause = (e as { cause?: { message?: string } }).cause;
      return cause?.message ?? (e as Error).message;
    }
  return null;
}

/**
 * A tool result block of the SDK copy the agent runs on (built through its `Message` class, as
 * the conversation's own messages show it), so the conversation managers and the model activity's
 * payload see the SDK's own block.
 */
function resultBlock(
  ctx: ToolContext,
  toolUseId: string,
  status: 'success' | 'error',
  value: unknown,
): ToolResultBlock {
  const data = { toolResult: { toolUseId, status, content: [contentOf(value)] } };
  const Msg = messageClassOf((ctx.agent as unknown as { messages?: unknown[] }).messages ?? []);
  if (Msg) return Msg.fromMessageData({ role: 'user', content: [data] }).content[0] as ToolResultBlock;
  // No message to learn the class from (never in the SDK's loop): the block's own data shape.
  return {
    type: 'toolResultBlock',
    toolUseId,
    status,
    content: [contentOf(value)],
    toJSON: () => data,
  } as unknown as ToolResultBlock;
}
