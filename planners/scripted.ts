/**
 * The scripted planner: proposes the calls of a replay-format file (docs/spec.md §6) in order,
 * so the durable run can be checked against the offline replay, and demos run without
 * a model. Its memory is just the index of the next proposal.
 */
import { NO_USAGE, type Planner, type PlannerInput, type PlannerOutput } from '../common/planner';
import { parseReplayFile, scriptCallAt, type ReplayFile } from '../guard';

interface ScriptMemory {
  next: number;
}

/** Reads the script out of a scripted PlannerSpec (inline `script`). */
export function scriptOf(input: Pick<PlannerInput, 'planner'>): ReplayFile {
  if (input.planner.kind !== 'scripted' || input.planner.script === undefined) {
    throw new TypeError('scripted planner: the run has no inline script (agentctl start --script FILE)');
  }
  return parseReplayFile(input.planner.script);
}

/** A planner that replays a script's proposals. */
export function createScriptedPlanner(): Planner {
  return {
    async next(input: PlannerInput): Promise<PlannerOutput> {
      const script = scriptOf(input);
      const memory = (input.memory as ScriptMemory | null) ?? { next: 0 };
      const index = memory.next;
      const call = scriptCallAt(script.calls, index);
      if (!call) return { turn: { type: 'exhausted', usage: NO_USAGE }, memory };
      return {
        turn: {
          type: 'call',
          tool: call.tool,
          args: call.args ?? {},
          operationKey: call.operationKey ?? null,
          usage: { tokens: call.usage?.tokens ?? 0, costUsd: call.usage?.costUsd ?? 0 },
          scriptIndex: index,
        },
        memory: { next: index + 1 },
      };
    },
  };
}
