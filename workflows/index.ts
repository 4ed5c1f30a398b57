/** Workflows registered by the worker. */
export { agentRun } from './agent-run';
export { ledgerReaper } from './ledger-reaper';
