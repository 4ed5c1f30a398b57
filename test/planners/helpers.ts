/**
 * Fixtures shared by the planner tests: tool descriptors, input builders and a
 * recursive "does this value contain that string anywhere" check for key leaks.
 */
import type {
  Observation,
  PlannerInput,
  PlannerOutput,
  PlannerSpec,
  ToolDescriptor,
} from '../../common/planner';

/** A read tool as the registry would describe it (zod → JSON Schema output). */
export const SEARCH_TOOL: ToolDescriptor = {
  name: 'search',
  description: 'Search the index.',
  effect: 'read',
  inputSchema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { q: { type: 'string' }, limit: { type: 'integer', default: 10 } },
    required: ['q'],
    additionalProperties: false,
  },
};

/** A write tool. */
export const SEND_TOOL: ToolDescriptor = {
  name: 'send_notification',
  description: 'Send a notification to a user.',
  effect: 'write',
  inputSchema: {
    type: 'object',
    properties: { to: { type: 'string' }, text: { type: 'string' } },
    required: ['to', 'text'],
  },
};

/** Builds one planner turn's input. */
export function turnInput(
  planner: PlannerSpec,
  memory: unknown,
  observation: Observation | null = null,
  goal = 'Find x and notify ann.',
): PlannerInput {
  return { runId: 'run-1', goal, planner, tools: [SEARCH_TOOL, SEND_TOOL], memory, observation };
}

/** The observation for a call the planner returned. */
export function observe(out: PlannerOutput, result: Omit<Observation, 'tool' | 'callId'>): Observation {
  if (out.turn.type !== 'call') throw new Error(`expected a call, got ${out.turn.type}`);
  return { callId: out.turn.callId, tool: out.turn.tool, ...result };
}

/** Whether `secret` occurs anywhere in the JSON text of `value`. */
export function leaks(value: unknown, secret: string): boolean {
  return JSON.stringify(value ?? null).includes(secret);
}
