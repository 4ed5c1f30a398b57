/**
 * agent-loop-guard: define tools, host them in a worker, start and steer runs. This entry holds
 * what a program needs for that, and the errors it catches; everything else is on a subpath
 * (test/package/root-exports.test.ts keeps this entry to its list):
 *
 * - `agent-loop-guard/worker`: a worker built piece by piece. Ready-made tools (the finishing
 *   tool, `shellTool`), MCP tools, the ledger and the spend limits, the built-in planners and the
 *   model endpoints, the payload codec, the operators file and keys, the activities, the sinks,
 *   the workflows path, the worker's environment and its search attributes.
 * - `agent-loop-guard/client`: every client function (besides the ones here: the approvals'
 *   audit, conversations, the run tree, replay files) and the `agentRun` contract: its queries,
 *   signals, updates, schemas and ids. It loads no worker runtime.
 * - `agent-loop-guard/guard`: the pure loop guard, fingerprints, StopReports, the reasons, the
 *   profiles and the replay. No Node, no Temporal.
 * - `agent-loop-guard/workflows`: the `agentRun` workflow module, for a worker that bundles it
 *   itself (`createAgentWorker` does).
 * - `agent-loop-guard/core`: the guarded core every engine's adapter is built on.
 * - `agent-loop-guard/ai-sdk` and `/ai-sdk/worker`, `agent-loop-guard/openai-agents` and
 *   `/openai-agents/worker`: the guard for an agent on `@temporalio/ai-sdk` or
 *   `@temporalio/openai-agents`, workflow side and worker side.
 * - `agent-loop-guard/testing`: your agent's tests, with a scripted model and Temporal's test
 *   environment.
 *
 * The workflow itself is not exported from here: workflow code is bundled by the worker from
 * `agent-loop-guard/workflows`, and importing this entry from workflow code would pull the worker
 * into the bundle.
 *
 * @module agent-loop-guard
 */

// ── Errors: the one root; every error class of the package extends it and has a stable `code` ──
export { AgentLoopGuardError, isAgentLoopGuardError } from './common/errors';

// ── Tools: define one, and the errors a tool throws to say what kind of failure it hit ──
export { defineTool } from './tools/define-tool';
export type { AnyTool, ToolContext, ToolDefinition, ToolReturn } from './tools/define-tool';
export { FatalToolError, PreconditionToolError, RetryableToolError, ToolError } from './tools/errors';

// ── Worker: host the tools (the ledger, the planners and the `agentRun` workflow) ──
export { createAgentWorker, openWorkerDeps } from './worker/create-worker';
export type { AgentWorkerOptions, WorkerDeps, WorkerDepsOptions } from './worker/create-worker';
export { AgentLoopGuardPlugin } from './worker/plugin';
export type { AgentLoopGuardPluginOptions } from './worker/plugin';
export { loadConnectionOptions } from './worker/env';
export type { ConnectionSettings } from './worker/env';
export { connectToTemporal } from './worker/connect-temporal';
export type { ConnectToTemporalOptions } from './worker/connect-temporal';
export { openLedger } from './storage/ledger';
export type { Ledger, OpenLedgerOptions } from './storage/ledger';

// ── Runs: start, wait, read, stop, resume, approve or deny ──
export {
  approveRun,
  denyRun,
  getAgentRunReport,
  getAgentRunResult,
  getAgentRunStatus,
  getAgentRunTrace,
  getPendingApproval,
  listPendingApprovals,
  resumeAgentRun,
  startAgentRun,
  stopAgentRun,
  waitForAgentRun,
} from './client/api';
export type {
  AgentRunSettled,
  ApproveRunOptions,
  ApproveRunResult,
  DecideOptions,
  DenyRunResult,
  ListPendingOptions,
  PendingApproval,
  ResumeAgentRunOptions,
  StartAgentRunOptions,
  StopAgentRunOptions,
  StopAgentRunResult,
} from './client/api';
export { connect as connectClient } from './client/connect';
export type { Connected } from './client/connect';
export { runResultOf } from './common/run-ended';
export { guardProfile } from './guard/profiles';
export type { GuardProfileName } from './guard/profiles';
export type { GuardConfigInput, StopReport } from './guard';
export type { PlannerSpec } from './common/planner';
export type { RunInput, RunResult, RunStatus, TracePage, TracePageArgs } from './common/contracts';

// ── The errors a client catches: a refusal's exit code, a codec mismatch, a run of no engine ──
export { CliError, Exit } from './client/format';
export type { ExitCode } from './client/format';
export { PayloadCodecMismatchError } from './codec/mismatch';
export { NotAGuardedRunError } from './client/engine';
