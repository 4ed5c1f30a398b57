/**
 * The names operators query: span names, span/metric attribute keys and metric names.
 * One place, so docs/observability.md, dashboards and the tests agree with the code.
 */

/** Spans the worker creates itself (the Temporal interceptors add `RunWorkflow:*`, `StartActivity:*`, `RunActivity:*`). */
export const SpanNames = {
  /** One per decision of a run (before/after a call, or a run-level record); carries one `guard.decision` event. */
  DECISION: 'guard.decision',
  /** A run stopped (waits for a resume) or closed. */
  RUN_END: 'agent.run.end',
  /** A conversation's turn: from the agent handing it to the person until it came back. */
  TURN: 'conversation.turn',
} as const;

/** Event names on those spans. */
export const EventNames = {
  DECISION: 'guard.decision',
  /** A refusal steered back to the model instead of stopping the run (docs/spec.md §3.3). */
  STEER: 'guard.steer',
  RUN_END: 'agent.run.end',
  TURN: 'conversation.turn',
} as const;

/** Attribute keys. Workflow/run ids use the keys of @temporalio/interceptors-opentelemetry, so one query finds both. */
export const Attr = {
  WORKFLOW_ID: 'temporalWorkflowId',
  RUN_ID: 'run_id',
  AGENT_RUN_ID: 'run.id',
  STEP: 'run.step',
  PROGRESS_VERSION: 'run.progress_version',
  TERMINAL_STATE: 'run.terminal_state',
  CLOSED: 'run.closed',
  PHASE: 'guard.phase',
  RULE: 'guard.rule',
  DECISION: 'guard.decision',
  REASON: 'guard.reason',
  TOOL: 'tool.name',
  FINGERPRINT: 'tool.fingerprint',
  RESULT_KIND: 'tool.result_kind',
  ERROR_CODE: 'tool.error_code',
  TURN: 'conversation.turn',
  TURN_KIND: 'conversation.turn_kind',
  TURN_OUTCOME: 'conversation.outcome',
  TURN_MESSAGES: 'conversation.messages',
} as const;

/** Metric names (OTel meter `agent-loop-guard`). */
export const MetricNames = {
  /** Counter: runs stopped by the guard or the runtime, `{reason, terminal_state}`. */
  GUARD_STOPS: 'agent.guard.stops',
  /** Counter: every decision, `{phase, rule, decision}`. */
  GUARD_DECISIONS: 'agent.guard.decisions',
  /** Counter: runs that closed, `{terminal_state, reason}`. */
  RUNS_CLOSED: 'agent.runs.closed',
  /** Counter: `runTool` activity completions, `{tool, effect, via, result_kind}`. */
  TOOL_EXECUTIONS: 'agent.tool.executions',
  /** Counter: what the ledger answered for a write, `{tool, outcome}`. */
  LEDGER_OUTCOMES: 'agent.ledger.outcomes',
  /** Counter: planner tokens, `{planner_kind, planner_model, turn_type}`. */
  PLANNER_TOKENS: 'agent.planner.tokens',
  /** Counter: planner cost in USD, `{planner_kind, planner_model, turn_type}`. */
  PLANNER_COST_USD: 'agent.planner.cost_usd',
} as const;

/** Metric attribute keys (low cardinality: no run ids, no fingerprints). */
export const MetricAttr = {
  REASON: 'reason',
  TERMINAL_STATE: 'terminal_state',
  PHASE: 'phase',
  RULE: 'rule',
  DECISION: 'decision',
  TOOL: 'tool',
  EFFECT: 'effect',
  VIA: 'via',
  RESULT_KIND: 'result_kind',
  OUTCOME: 'outcome',
  PLANNER_KIND: 'planner_kind',
  PLANNER_MODEL: 'planner_model',
  TURN_TYPE: 'turn_type',
} as const;

/** Instrumentation scope of the worker's own spans and metrics. */
export const INSTRUMENTATION_SCOPE = 'agent-loop-guard';
