/**
 * Sub-agents (docs/spec.md §7.14): the built-in `spawn_agent` tool's args, a run's tree
 * settings and place in its tree, the signal a child sends its parent, and what the parent
 * keeps of each child. Sandbox-safe: the workflow, the plan activity and agentctl read it.
 */
import { defineSignal } from '@temporalio/workflow';
import { z } from 'zod';
import type { TerminalState } from '../guard';

/** The built-in tool a planner delegates with. */
export const SPAWN_AGENT_TOOL = 'spawn_agent';

/** The depth limit of a tree when the run does not set one (the root is depth 0). */
export const DEFAULT_MAX_DEPTH = 3;
/** How many children one run may spawn when it does not set a limit. */
export const DEFAULT_MAX_CHILDREN = 16;

/** The budget a parent hands its child: each at most what the parent has left. */
export const childBudgetSchema = z
  .object({
    maxSteps: z.number().int().positive().optional(),
    maxTokens: z.number().positive().optional(),
    maxCostUsd: z.number().positive().optional(),
    maxMs: z.number().positive().optional(),
  })
  .strict();
/** A child's budget as the planner asks for it. */
export type ChildBudget = z.output<typeof childBudgetSchema>;

/** `spawn_agent` args (strict: anything else is `invalid_args`). */
export const spawnArgsSchema = z
  .object({
    /** The child's goal. */
    goal: z.string().min(1).max(4000),
    /** The tools the child may use: a subset of the parent's (`spawn_agent` included, to nest). */
    tools: z.array(z.string().min(1)).max(64),
    /** At most what the parent has left; absent: everything the parent has left. */
    budget: childBudgetSchema.optional(),
    /** Only under a scripted parent: the child's script (a replay file, run live). */
    script: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
/** Parsed `spawn_agent` args. */
export type SpawnArgs = z.output<typeof spawnArgsSchema>;

/** What `spawn_agent` says to a planner (the model sees this description and the args' schema). */
export const SPAWN_AGENT_DESCRIPTION =
  'Delegate a sub-task to a sub-agent: it works on `goal` with only the listed `tools` and ' +
  'the given budget (default: all this run has left; never more), and answers with its summary. ' +
  'Its writes go through the same ledger, so a sub-task spawned again never repeats a write.';

/** A run's permission to spawn sub-agents, and the tree's limits. */
export const subAgentsSchema = z
  .object({
    maxDepth: z.number().int().min(1).max(10).default(DEFAULT_MAX_DEPTH),
    maxChildren: z.number().int().min(1).max(1000).default(DEFAULT_MAX_CHILDREN),
  })
  .strict();
/** Tree settings with defaults filled. */
export type SubAgents = z.output<typeof subAgentsSchema>;

/** Where a child run sits in its tree (set by its parent; absent on a root). */
export const treePlaceSchema = z
  .object({
    rootId: z.string().min(1),
    parentId: z.string().min(1),
    depth: z.number().int().min(1),
  })
  .strict();
/** A child's place in its tree. */
export type TreePlace = z.output<typeof treePlaceSchema>;

/** What a child tells its parent while it lives: it stopped and waits for a person, or it resumed. */
export interface ChildEvent {
  readonly childId: string;
  readonly event: 'stopped' | 'resumed';
  readonly terminalState?: TerminalState | null;
  readonly reason?: string | null;
  readonly detail?: string | null;
}

/** Signal a child sends its parent (docs/spec.md §7.14). */
export const childEventSignal = defineSignal<[ChildEvent]>('childEvent');

/** What a parent keeps of each child it spawned (status `children`, `agentctl tree`). */
export interface ChildSummary {
  readonly workflowId: string;
  readonly goal: string;
  /** `RUNNING`, `WAITING` (stopped, waiting for a person), or its terminal state once ended. */
  state: string;
  reason: string | null;
  /** What was reserved for it out of the parent's budget (null: unbounded). */
  readonly reserved: {
    readonly steps: number | null;
    readonly tokens: number | null;
    readonly costUsd: number | null;
    readonly ms: number | null;
  };
  /** What it used, charged to the parent when it ended (its own children included). */
  used: { steps: number; tokens: number; costUsd: number } | null;
}

/** Usage a child run reports in its result (its own plus its children's). */
export interface RunUsage {
  readonly steps: number;
  readonly tokens: number;
  readonly costUsd: number;
}
