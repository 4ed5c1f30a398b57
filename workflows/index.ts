/** Workflows registered by the worker. */
export { agentRun } from './agent-run';
