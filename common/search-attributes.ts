/**
 * The custom search attributes of an agent run (docs/spec.md §7), so an operator can filter runs
 * in the Temporal UI and CLI (`temporal workflow list -q 'AgentState="NEEDS_HUMAN"'`).
 *
 * This is the ONE place the names and types live: the dev server (devserver/dev-server.ts),
 * the test environment (test/helpers/temporal-env.ts), docker-compose.yml (checked by
 * test/deploy/compose.test.ts), the workflow (upsertSearchAttributes) and the worker's start-up
 * check (worker/search-attributes.ts: registers missing ones or exits naming them) all read it.
 *
 * Sandbox-safe: no Node imports, only `@temporalio/common`.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Name → type as the Temporal CLI spells it (`--search-attribute Name=Type`). */
export const SEARCH_ATTRIBUTES = {
  AgentState: 'Keyword',
  AgentGuardReason: 'Keyword',
  AgentSteps: 'Int',
  AgentRootRun: 'Keyword',
} as const;

export type SearchAttributeName = keyof typeof SEARCH_ATTRIBUTES;
export type CliSearchAttributeType = (typeof SEARCH_ATTRIBUTES)[SearchAttributeName];

/** The run's state: RUNNING, or a terminal state (a stopped run shows the stop's, e.g. NEEDS_HUMAN). */
export const AGENT_STATE = defineSearchAttributeKey('AgentState', SearchAttributeType.KEYWORD);
/** Why the guard stopped the run (the guard's reason code), empty while running. */
export const AGENT_GUARD_REASON = defineSearchAttributeKey('AgentGuardReason', SearchAttributeType.KEYWORD);
/** Tool steps executed so far. */
export const AGENT_STEPS = defineSearchAttributeKey('AgentSteps', SearchAttributeType.INT);

/**
 * The workflow id of the root of the run's agent tree (docs/spec.md §7.14): set on a run that
 * may spawn sub-agents and on every sub-agent, so `AgentRootRun="ID"` lists a whole tree.
 */
export const AGENT_ROOT_RUN = defineSearchAttributeKey('AgentRootRun', SearchAttributeType.KEYWORD);

/** All typed keys, in declaration order (for `TestWorkflowEnvironment` `searchAttributes`). */
export const SEARCH_ATTRIBUTE_KEYS = [AGENT_STATE, AGENT_GUARD_REASON, AGENT_STEPS, AGENT_ROOT_RUN] as const;

/** `['--search-attribute', 'AgentState=Keyword', …]` for `temporal server start-dev`. */
export function searchAttributeCliArgs(): string[] {
  return Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => [
    '--search-attribute',
    `${name}=${type}`,
  ]);
}

/**
 * The visibility query of runs that wait for an operator: still open (Running in Temporal's
 * terms) while their published state is a stop (a guard stop, a fault, an approval). The
 * filtered list the demo and `agentctl list --waiting` link to in the Temporal UI.
 */
export const WAITING_FOR_OPERATOR_QUERY =
  'ExecutionStatus = "Running" AND AgentState IN ("STOPPED_LOOP_GUARD", "NEEDS_HUMAN", "PARTIAL", "FAILED")';
