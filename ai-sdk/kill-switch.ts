/**
 * The kill switch of an AI SDK agent's guard (ai-sdk/agent-guard.ts): the `stop` update and
 * signal of an `agentRun` (common/contracts.ts `stopUpdate`/`stopSignal`, workflows/run-gate.ts),
 * so `agentctl stop` works on a user's own workflow. A stop is authorised by the worker's
 * `agentLoopGuardVerifyOperator` (the operator's signature and role when an operators file is
 * configured), like a resume. Until it is authorised it is `pending` and already holds the loop
 * at its next tool call; once `held` the loop stops there, `operator_stop`, before the call runs
 * (or at `stopWhen`, whichever comes first). A run that is stopped (or waits for an approval)
 * has no running step to stop: the stop is refused, saying so. Workflow code.
 */
import { condition } from '@temporalio/workflow';
import { stopRequestSchema, type StopAnswer, type StopRequest } from '../common/contracts';

type Hold = { readonly kind: 'none' } | { readonly kind: 'pending' | 'held'; readonly req: StopRequest };

const NONE: Hold = { kind: 'none' };

const reasonOf = (issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>) =>
  issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`).join('; ');

/** What the kill switch needs from the guard it serves. */
export interface KillHost {
  /** The phase an operator sees (`RUNNING`, or the terminal state of the stop in force). */
  phase(): string;
  /** The worker's verdict on the operator (ai-sdk/control.ts `ResumeGate.authoriseStop`). */
  authorise(req: StopRequest): Promise<{ ok: boolean; detail: string }>;
}

export class KillSwitch {
  private hold: Hold = NONE;
  private readonly answers = new Map<string, StopAnswer>();

  constructor(private readonly host: KillHost) {}

  /** The `stop` update's validator: a malformed request is refused before anything is recorded. */
  validate(raw: unknown): void {
    const parsed = stopRequestSchema.safeParse(raw);
    if (!parsed.success) throw new Error(reasonOf(parsed.error.issues));
  }

  /** The `stop` signal: the same as the update; the answer has nowhere to go. */
  async onSignal(raw: unknown): Promise<void> {
    const parsed = stopRequestSchema.safeParse(raw);
    if (parsed.success) await this.stop(parsed.data);
  }

  /** The `stop` update: `accepted` only when the operator is authorised and the loop is running. */
  async stop(raw: StopRequest): Promise<StopAnswer> {
    const req = stopRequestSchema.parse(raw);
    const prior = this.answers.get(req.requestId);
    if (prior) return prior;
    const answer = await this.decide(req);
    this.answers.set(req.requestId, answer);
    return answer;
  }

  private async decide(req: StopRequest): Promise<StopAnswer> {
    const held: StopAnswer = { accepted: true, reason: 'the run stops before its next tool call' };
    const phase = this.host.phase();
    if (phase !== 'RUNNING')
      return { accepted: false, reason: `run is ${phase}: there is no running step to stop` };
    if (this.hold.kind === 'held') return held;
    if (this.hold.kind === 'none') this.hold = { kind: 'pending', req };
    const who = await this.host.authorise(req);
    if (!who.ok) {
      if (this.hold.kind === 'pending' && this.hold.req === req) this.hold = NONE;
      return { accepted: false, reason: `not authorised: ${who.detail}` };
    }
    if (this.hold.kind !== 'held') this.hold = { kind: 'held', req };
    return held;
  }

  /** The loop's side, before a tool call: waits out a pending stop; the stop to apply, or null. */
  async take(): Promise<StopRequest | null> {
    if (this.hold.kind === 'pending') await condition(() => this.hold.kind !== 'pending');
    return this.takeHeld();
  }

  /** The stop to apply now (a held one), or null; `stopWhen` cannot wait. */
  takeHeld(): StopRequest | null {
    const h = this.hold;
    if (h.kind !== 'held') return null;
    this.hold = NONE;
    return h.req;
  }
}
