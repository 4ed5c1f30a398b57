/**
 * What the workflow tells the worker's telemetry about each decision, through a Temporal
 * sink: sinks are not part of history and are not called on replay, so telemetry can
 * never change what a run decides. The worker registers `agentTelemetry` always (a no-op
 * when OpenTelemetry is off; worker/telemetry when it is on); a worker whose telemetry
 * listens to nothing bundles core/telemetry-off.ts, and its runs make no call at all.
 */
import type { Sinks } from '@temporalio/workflow';

/** One decision of the run, before or after a call, or a run-level record. */
export interface DecisionEvent {
  readonly runId: string;
  readonly phase: 'before' | 'after' | 'run';
  /** `before.N` / `after.N`: the rule of docs/spec.md §3 that decided (guard/reasons.ts `ruleOf`). */
  readonly rule: string;
  readonly decision: string;
  readonly reason: string | null;
  readonly tool: string | null;
  readonly fingerprint: string | null;
  readonly resultKind: string | null;
  readonly errorCode: string | null;
  readonly step: number;
  readonly progressVersion: number;
  /** Workflow time of the decision (ms since the epoch): its span's time, however late its batch is sent. */
  readonly atMs: number;
}

/** A run that stopped or finished. */
export interface RunEndEvent {
  readonly runId: string;
  readonly terminalState: string;
  readonly reason: string | null;
  /** True when the run closed; false when it stopped and waits for a resume. */
  readonly closed: boolean;
}

/** One turn of a conversation: the agent handed it to the person, and how it came back. */
export interface TurnEvent {
  readonly runId: string;
  /** 1, 2, 3, … across the conversation. */
  readonly turn: number;
  /** What the agent waited on: its `ask_human` question or its text reply. */
  readonly kind: 'question' | 'reply';
  /** Workflow time the agent handed the turn over, and the time it came back (ms since the epoch). */
  readonly startedAtMs: number;
  readonly endedAtMs: number;
  /** `answered` (messages taken), `closed` (the person closed it), `idle` (the idle timeout). */
  readonly outcome: 'answered' | 'closed' | 'idle';
  /** The person's messages the model got for this turn. */
  readonly messages: number;
}

/** The sinks an agent run calls. */
export interface AgentSinks extends Sinks {
  agentTelemetry: {
    decision(event: DecisionEvent): void;
    /**
     * A batch of decisions, in order (core/telemetry-outbox.ts): what a worker whose bundle
     * has the outbox interceptor is sent instead of one `decision` call each.
     */
    decisions(events: readonly DecisionEvent[]): void;
    runEnd(event: RunEndEvent): void;
    /** A conversation's turn came back: one `conversation.turn` span. */
    turn(event: TurnEvent): void;
  };
}

/** The sink's name, as the worker registers it. */
export const AGENT_TELEMETRY_SINK = 'agentTelemetry';
