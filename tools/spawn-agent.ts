/**
 * The built-in `spawn_agent` tool (docs/spec.md §7.14) and the view of a worker's tools one
 * run may use. `spawn_agent` is validated and fingerprinted here like any tool (its goal and
 * tools; the budget and a scripted child's script do not change what it asks for), but it
 * never runs in an activity: the workflow starts the child run.
 */
import { ResultCode } from '../guard';
import {
  SPAWN_AGENT_DESCRIPTION,
  SPAWN_AGENT_TOOL,
  spawnArgsSchema,
  type SpawnArgs,
} from '../common/sub-agents';
import { ASK_HUMAN_TOOL } from '../common/conversation-run';
import { askHumanTool } from './ask-human';
import { defineTool, type AnyTool } from './define-tool';
import { ToolRegistry, type NormalizedProposal } from './registry';

/** `spawn_agent` as a tool definition (its execute is never called: the workflow spawns). */
export const spawnAgentTool = defineTool({
  name: SPAWN_AGENT_TOOL,
  description: SPAWN_AGENT_DESCRIPTION,
  schema: spawnArgsSchema,
  effect: 'read',
  nonSemantic: ['budget', 'script'],
  execute: () => ({
    kind: 'FATAL',
    code: ResultCode.FATAL,
    message: 'spawn_agent is run by the workflow, not as an activity',
  }),
});

/** What a run may use of the worker's tools (RunInput `tools`, `subAgents`). */
export interface RunToolsScope {
  /** The names the run may use; absent: every tool the worker hosts. */
  readonly tools?: readonly string[] | null;
  /** The run may delegate with `spawn_agent`. */
  readonly spawnAgents?: boolean;
  /** The run is a conversation: `ask_human` is offered, whatever `tools` lists. */
  readonly askHuman?: boolean;
}

/**
 * The registry one run sees: the worker's tools restricted to the run's list, plus
 * `spawn_agent` when the run may spawn, and always the worker's finishing tool (a run must be
 * able to finish). Without a scope, the worker's registry itself.
 */
export function scopedRegistry(registry: ToolRegistry, scope: RunToolsScope): ToolRegistry {
  if (!scope.tools && !scope.spawnAgents && !scope.askHuman) return registry;
  const allowed = scope.tools ? new Set(scope.tools) : null;
  const tools: AnyTool[] = registry
    .names()
    .filter(
      (n) =>
        n !== SPAWN_AGENT_TOOL &&
        n !== ASK_HUMAN_TOOL &&
        (!allowed || allowed.has(n) || n === registry.finishing),
    )
    .map((n) => registry.get(n)!);
  if (scope.spawnAgents && (!allowed || allowed.has(SPAWN_AGENT_TOOL))) tools.push(spawnAgentTool);
  if (scope.askHuman) tools.push(askHumanTool);
  return new ToolRegistry(tools, { finishing: registry.finishing });
}

/**
 * A normalised `spawn_agent` call whose `tools` name something the run itself may not use is
 * refused before anything starts: a child never gets more than its parent.
 */
export function refuseForeignTools(n: NormalizedProposal, runTools: ToolRegistry): NormalizedProposal {
  if (n.tool !== SPAWN_AGENT_TOOL || n.rejection) return n;
  const asked = (n.args as SpawnArgs).tools;
  const foreign = asked.filter((t) => !runTools.get(t));
  if (foreign.length === 0) return n;
  return {
    ...n,
    rejection: {
      kind: 'PRECONDITION',
      code: ResultCode.SPAWN_REFUSED,
      unmet: `tools this run does not have: ${foreign.join(', ')} (this run has: ${runTools.names().join(', ')})`,
    },
  };
}
