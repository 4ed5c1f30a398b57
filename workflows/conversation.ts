/**
 * A conversation is one durable run (docs/spec.md §7.16): the model's `ask_human`
 * call and its text reply hand the turn to the person; the run waits durably, off the agent's
 * wall clock, for their `message` update (the call's result, or the next user turn). Guard,
 * ledger, approvals, budgets and steering are the run's, so they carry across turns. Messages
 * while the agent works wait in a bounded queue; the update's validator refuses the rest with
 * the reason. The pending turn, the queue, the answers by message id and the transcript's tail
 * travel in the checkpoint (continue-as-new loses none, applies none twice). Workflow code.
 */
import { condition, upsertSearchAttributes } from '@temporalio/workflow';
import { AGENT_STATE } from '../common/search-attributes';
import { tellTurn } from '../core/telemetry-outbox';
import type { ProposalInfo } from '../activities/types';
import {
  ASK_HUMAN_TOOL,
  messageRequestSchema,
  WAITING_FOR_PERSON,
  type ConversationCheckpoint,
  type ConversationEnding,
  type ConversationSettings,
  type ConversationView,
  type MessageAnswer,
  type PendingTurn,
  type QueuedMessage,
  type TranscriptEntry,
} from '../common/conversation-run';
import type { Checkpoint } from '../common/contracts';
import type { PlannerTurn } from '../common/planner';
import { redactText } from '../common/redact';
import { GuardReason, TerminalState } from '../guard';
import type { RunGate } from '../core/gate';
import { refuseOrParse } from './conversation-refusal';
import {
  answerReason,
  closedText,
  closingReason,
  cut,
  endingOf,
  personWrote,
  queuedReason,
  QUOTE,
  TRANSCRIPT_KEPT,
  viewOf,
} from './conversation-words';
import { isTerminal } from '../core/phase';
import type { RunState } from './run-state';

/** Transcript entries that travel in a checkpoint (the workflow keeps TRANSCRIPT_KEPT). */
const TRANSCRIPT_CARRIED = 20;
/** A transcript text's longest form in the workflow, and in a checkpoint. */
const TEXT_KEPT = 8000;
const TEXT_CARRIED = 2000;
/** Answers by message id kept (a retried update is answered as before, applied once). */
const ANSWERS_KEPT = 100;

/** Each run's conversation, for the views (workflows/run-views.ts) that only get the RunState. */
const BY_RUN = new WeakMap<RunState, Conversation>();

/** The run's conversation (null when the run is not one). */
export function conversationOf(run: RunState): Conversation | null {
  return BY_RUN.get(run) ?? null;
}

/** What a wait for the person ended in. */
export type WaitEnd = 'answered' | 'ended' | 'interrupted';

/** One run's conversation with its person (null on a run that is not a conversation). */
export class Conversation {
  private pending: PendingTurn | null;
  private readonly queue: QueuedMessage[];
  private readonly answered: Map<string, MessageAnswer>;
  private readonly transcript: TranscriptEntry[];
  private seq: number;
  private turns: number;
  private received: number;
  /** The person's message for the next plan after a text reply, until a plan takes it. */
  private unread: string | null;
  private closing: { readonly text: string; readonly by: string | null } | null = null;
  private closed = false;
  /** The tool whose call is in flight (null while the model plans or the agent waits): what a queued answer says. */
  private calling: string | null = null;
  /** The worker's finishing tool as the last plan named it (PlanOutput `finishing`; null: none). */
  private finishing: string | null = null;
  /** Moves with every message taken: a continue-as-new seals again when it moved meanwhile. */
  version = 0;

  private constructor(
    private readonly run: RunState,
    readonly settings: ConversationSettings,
    cp: ConversationCheckpoint | undefined,
  ) {
    this.pending = cp?.pending ?? null;
    this.queue = cp ? cp.queue.map((m) => ({ ...m })) : [];
    this.answered = new Map(cp?.answered ?? []);
    this.transcript = cp ? cp.transcript.map((e) => ({ ...e })) : [];
    this.seq = cp?.seq ?? 0;
    this.turns = cp?.turns ?? 0;
    this.received = cp?.received ?? 0;
    this.unread = cp?.unread ?? null;
  }

  /** The run's conversation, from its input and checkpoint; null when the run is not one. */
  static of(run: RunState): Conversation | null {
    const settings = run.input.conversation;
    if (!settings) return null;
    const cp = (run.input.checkpoint as Checkpoint | undefined)?.conversation;
    const conversation = new Conversation(run, settings, cp);
    BY_RUN.set(run, conversation);
    return conversation;
  }

  // ---- the loop's side ----

  /** True while the agent waits on the person (a question or a reply of its own). */
  get waiting(): boolean {
    return this.pending !== null;
  }

  /** The model's text reply in a conversation is a message to the person: true when taken. */
  onText(turn: Extract<PlannerTurn, { type: 'finish' }>): boolean {
    if (turn.ended !== 'text' || turn.summary.trim() === '') return false;
    const text = redactText(cut(turn.summary, TEXT_KEPT));
    return this.handOver({ kind: 'reply', text, sinceMs: Date.now() });
  }

  /**
   * The model's call, before the guard: true when nothing runs — `ask_human`, or the finishing
   * tool while the person's messages wait (the model reads them first, as the call's
   * result; the worker's finishing tool, renamed or not). Other calls are remembered in flight.
   */
  onCall(turn: Extract<PlannerTurn, { type: 'call' }>, p: ProposalInfo): boolean {
    if (this.onAsk(turn, p)) return true;
    if (p.tool === this.finishing && !p.rejection && this.queue.length > 0 && !this.closing) {
      const taken = this.queue.splice(0);
      this.run.observation = personWrote(turn.callId, p.tool, taken);
      const seqs = taken.map((m) => m.seq);
      this.run.note('conversation_message', null, { args: { seqs, before: p.tool } });
      this.run.publish(false);
      return true;
    }
    this.calling = p.tool;
    return false;
  }

  /** The model's `ask_human` call (valid args): true when taken, nothing runs. */
  private onAsk(turn: Extract<PlannerTurn, { type: 'call' }>, p: ProposalInfo): boolean {
    if (p.tool !== ASK_HUMAN_TOOL || p.rejection) return false;
    const question = (p.args as { question?: unknown } | null)?.question;
    if (typeof question !== 'string') return false;
    const text = redactText(cut(question, TEXT_KEPT));
    return this.handOver({ kind: 'question', callId: turn.callId ?? null, text, sinceMs: Date.now() });
  }

  private handOver(pending: PendingTurn): true {
    this.pending = pending;
    this.turns += 1;
    // The turn consumed the last observation: the person's message answers next.
    this.run.observation = null;
    this.say('agent', pending.kind, pending.text, null);
    this.run.note(`conversation_${pending.kind}`, null, { args: { said: cut(pending.text, QUOTE) } });
    this.run.publish(false);
    return true;
  }

  /** The person closed the conversation while the agent worked: true when the run now ends. */
  closeIfAsked(): boolean {
    // The loop goes round: no call is in flight any more.
    this.calling = null;
    if (!this.closing) return false;
    this.end(GuardReason.CONVERSATION_CLOSED, closedText(this.closing));
    return true;
  }

  /**
   * Waits for the person (durable, off the agent's wall clock): `answered` (their message is the
   * next plan's observation or user turn), `ended` (closed or idle: the stop is in force) or
   * `interrupted` (an operator's stop arrived: the loop applies it; the turn stays pending).
   */
  async wait(gate: RunGate): Promise<WaitEnd> {
    const run = this.run;
    const pending = this.pending;
    if (!pending) return 'answered';
    if (this.queue.length === 0 && !this.closing) {
      const start = Date.now();
      // Visible apart from runs waiting for an operator (the console, `agentctl list`).
      upsertSearchAttributes([{ key: AGENT_STATE, value: WAITING_FOR_PERSON }]);
      const got = await condition(
        () => this.queue.length > 0 || this.closing !== null || gate.stopRequested,
        // No timer summary here: this wait is started and cut short once per message, and a
        // summary made a burst of messages 4× slower (150 messages: 24 s against 6 s).
        this.settings.idleTimeoutMs,
      );
      // Waiting for a person is not the agent's time.
      run.guard.discountWait(Date.now() - start);
      upsertSearchAttributes([{ key: AGENT_STATE, value: 'RUNNING' }]);
      if (!got) {
        this.turnSpan(pending, 'idle', 0);
        const s = Math.round(this.settings.idleTimeoutMs / 1000);
        this.end(
          GuardReason.CONVERSATION_IDLE,
          `no message from the person within ${s} s of the agent's ${pending.kind}: "${cut(pending.text, QUOTE)}"`,
        );
        return 'ended';
      }
    }
    if (this.closing) {
      this.turnSpan(pending, 'closed', 0);
      this.end(GuardReason.CONVERSATION_CLOSED, closedText(this.closing));
      return 'ended';
    }
    if (this.queue.length === 0) return 'interrupted';
    const taken = this.queue.splice(0);
    this.turnSpan(pending, 'answered', taken.length);
    const text = taken.map((m) => m.text).join('\n\n');
    this.pending = null;
    if (pending.kind === 'question') {
      run.observation = {
        ...(pending.callId ? { callId: pending.callId } : {}),
        tool: ASK_HUMAN_TOOL,
        kind: 'SUCCESS',
        data: { answer: text },
      };
    } else {
      this.unread = text;
    }
    run.note('conversation_message', null, { args: { seqs: taken.map((m) => m.seq) } });
    run.publish(false);
    return 'answered';
  }

  /** The turn's OpenTelemetry span (worker/telemetry/agent-sink.ts: `conversation.turn`). */
  private turnSpan(p: PendingTurn, outcome: 'answered' | 'closed' | 'idle', messages: number): void {
    const at = { startedAtMs: p.sinceMs, endedAtMs: Date.now() };
    tellTurn({ runId: this.run.runId, turn: this.turns, kind: p.kind, ...at, outcome, messages });
  }

  /** The person's message for the next plan after a text reply (null: none). */
  get userText(): string | null {
    return this.unread;
  }

  /** The plan took the person's message (not sent again) and named the worker's finishing tool. */
  planned(finishing: string | null): void {
    this.unread = null;
    this.finishing = finishing;
  }

  private end(reason: string, unmet: string): void {
    this.closed = true;
    this.say('agent', 'end', `the conversation ended: run PARTIAL ${reason}: ${unmet}`, null);
    this.run.runtimeStop(reason, TerminalState.PARTIAL, undefined, unmet);
  }

  private say(from: TranscriptEntry['from'], kind: TranscriptEntry['kind'], text: string, by: string | null) {
    this.seq += 1;
    this.transcript.push({ seq: this.seq, from, kind, text, atMs: Date.now(), ...(by ? { by } : {}) });
    if (this.transcript.length > TRANSCRIPT_KEPT * 2)
      this.transcript.splice(0, this.transcript.length - TRANSCRIPT_KEPT);
    return this.seq;
  }

  // ---- the `message` update ----

  /** The `message` update's validator: a synchronous no with the reason, before anything is recorded. */
  validate(raw: unknown): void {
    refuseOrParse(raw, {
      settings: this.settings,
      known: (id) => this.answered.has(id),
      closed: this.closed || this.closing !== null,
      ending: this.ending()?.as ?? null,
      phase: this.run.phase,
      stop: this.run.stopInForce,
      waiting: this.pending !== null,
      queued: this.queue.length,
    });
  }

  /** The `message` update: takes the message, answers what the run will do with it. */
  onMessage(raw: unknown): MessageAnswer {
    const req = messageRequestSchema.parse(raw);
    const prior = this.answered.get(req.messageId);
    if (prior) return prior;
    this.received += 1;
    this.version += 1;
    const by = req.from ?? null;
    const seq = this.say('person', req.close ? 'close' : 'message', redactText(cut(req.text, TEXT_KEPT)), by);
    let answer: MessageAnswer;
    if (req.close) {
      this.closing = { text: req.text, by };
      answer = { accepted: true, action: 'closing', reason: closingReason(this.queue.length), seq };
    } else {
      this.queue.push({ seq, text: req.text });
      const p = this.pending;
      const n = this.queue.length;
      const queued = queuedReason(this.calling, this.finishing, n, this.settings.queueLimit);
      answer = p
        ? { accepted: true, action: 'answer', reason: answerReason(p, n), seq }
        : { accepted: true, action: 'queued', reason: queued, seq, position: n };
    }
    this.answered.set(req.messageId, answer);
    if (this.answered.size > ANSWERS_KEPT * 2) {
      for (const id of [...this.answered.keys()].slice(0, this.answered.size - ANSWERS_KEPT))
        this.answered.delete(id);
    }
    this.run.publish(false);
    return answer;
  }

  /** How the conversation ended, in the run's own words; null while it goes on. */
  ending(): ConversationEnding | null {
    return endingOf(this.run.phase, this.run.stopInForce, this.closed, this.closing !== null);
  }

  // ---- views ----

  /** The `conversation` query. */
  view(after = 0): ConversationView {
    const { settings, pending, queue, transcript, turns, received, seq } = this;
    const terminal = isTerminal(this.run.phase);
    const [over, ended, nowMs] = [this.closed || terminal, terminal ? this.ending() : null, Date.now()];
    return viewOf({ settings, pending, queue, transcript, over, ended, turns, received, seq, nowMs }, after);
  }

  /** One line for the UI's details: who speaks now. */
  detailsLine(): string {
    const p = this.pending;
    if (p) return `**waiting for the person** (${p.kind}, turn ${this.turns}) ${cut(p.text, QUOTE)}`;
    return `**conversation** turn ${this.turns} · messages ${this.received}${this.queue.length ? ` · queued ${this.queue.length}` : ''}`;
  }

  /** What travels in the checkpoint (bounded). */
  toJSON(): ConversationCheckpoint {
    return {
      v: 1,
      pending: this.pending,
      queue: this.queue.map((m) => ({ ...m })),
      answered: [...this.answered.entries()].slice(-ANSWERS_KEPT),
      transcript: this.transcript
        .slice(-TRANSCRIPT_CARRIED)
        .map((e) => ({ ...e, text: cut(e.text, TEXT_CARRIED) })),
      seq: this.seq,
      turns: this.turns,
      received: this.received,
      ...(this.unread !== null ? { unread: this.unread } : {}),
    };
  }
}
