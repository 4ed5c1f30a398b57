/**
 * What an accepted resume tells the model before its next turn (docs/concepts.md "Resume"):
 * who resumed and why, the operator's note, what was verified and the fresh result the check
 * read (when it re-ran the blocked call, that result is the call's observation), what was
 * raised. Without it a resumed model is asked the old question: its conversation ends with the
 * stop's refusal and it acts on what it read before the world changed.
 *
 * One place for every engine: an `agentRun` hands the note to its planner with the next turn
 * (PlanInput `resumeNote`); a framework adapter (AI SDK, OpenAI Agents) weaves it into each
 * model request through {@link ResumeNotes.weave}. Workflow code: pure, deterministic.
 */
import { redact, redactText } from '../common/redact';

/** The most characters of a fresh result the note quotes (as JSON; the rest is cut with a mark). */
export const MAX_OBSERVED_CHARS = 4_000;

/** What a resume's verification read now: the blocked call's fresh result, or the verifier's reading. */
export interface ResumeObservation {
  /** The tool whose fresh result this is (null: the verifier's own reading of the world). */
  readonly tool: string | null;
  /** The args it ran with (redacted), when it re-ran the blocked call. */
  readonly args?: unknown;
  /** The fresh result, bounded by {@link boundedObservation}. */
  readonly result: unknown;
}

/** What the note is built from: the accepted request, the verdict, the stop it lifted. */
export interface ResumeFacts {
  readonly actor: string;
  readonly reason: string;
  /** The operator's note for the model (`agentctl resume --note`). */
  readonly note?: string | undefined;
  /** What the operator said changed (recorded; the verification is what counts). */
  readonly precondition?: string | undefined;
  /** The lift rule's verdict: what was verified, approved, settled or raised. */
  readonly verified: string;
  /** The stop that was lifted: its reason and the call it named. */
  readonly stopReason: string;
  readonly blockedTool: string | null;
  /** The budgets raised by this resume. */
  readonly raised?: Readonly<Record<string, number | undefined>>;
  readonly observed?: ResumeObservation | null | undefined;
}

/** A value as a note quotes it: redacted, and cut past {@link MAX_OBSERVED_CHARS} of JSON. */
export function boundedObservation(value: unknown): unknown {
  const clean = redact(value);
  const json = JSON.stringify(clean) ?? 'null';
  return json.length <= MAX_OBSERVED_CHARS
    ? clean
    : { preview: json.slice(0, MAX_OBSERVED_CHARS), truncated: true, chars: json.length };
}

/** The tool result's data when it is a SUCCESS (what the model would have read), else the whole result. */
function readable(result: unknown): unknown {
  if (typeof result === 'object' && result !== null && (result as { kind?: unknown }).kind === 'SUCCESS')
    return (result as { data?: unknown }).data ?? null;
  return result;
}

/** The text the model reads after an accepted resume, as a message from the runtime. */
export function resumeNoteText(f: ResumeFacts): string {
  const lines: string[] = [];
  const on = f.blockedTool ? ` on ${f.blockedTool}` : '';
  lines.push(
    `[agent-loop-guard] The run was stopped (${f.stopReason}${on}) and has been resumed by ${redactText(f.actor)}: ${redactText(f.reason)}.`,
  );
  if (f.note) lines.push(`Operator's note: ${redactText(f.note)}`);
  if (f.precondition) lines.push(`What the operator says changed: ${redactText(f.precondition)}`);
  lines.push(`Verified before resuming: ${redactText(f.verified)}.`);
  const raised = Object.entries(f.raised ?? {}).filter(([, v]) => v !== undefined);
  if (raised.length > 0) lines.push(`Budget raised: ${raised.map(([k, v]) => `${k} to ${v}`).join(', ')}.`);
  const o = f.observed;
  if (o) {
    const what = o.tool
      ? `${o.tool}${o.args !== undefined ? ` ${JSON.stringify(o.args)}` : ''} was run again for this check and returned`
      : 'The check read';
    lines.push(`${what}: ${JSON.stringify(readable(o.result)) ?? 'null'}`);
    lines.push(
      'This is newer than the results earlier in this conversation: act on it, not on what you read before the stop.',
    );
  } else {
    lines.push(
      'What you read before the stop may be out of date: read again what your next step depends on.',
    );
  }
  return lines.join('\n');
}

/**
 * The resume notes of one run, for an engine whose model requests are built by a framework
 * from its own conversation (the AI SDK's prompt, the OpenAI Agents SDK's input items): a note
 * not yet given goes at the end of the next request, and stays at that place in every later
 * request of the run, so the model reads it once, where it happened. In workflow memory:
 * rebuilt on replay from the same history.
 */
export class ResumeNotes {
  private pending: string | null = null;
  private readonly placed: { readonly at: number; readonly text: string }[] = [];

  /** A note to give with the next model request (two resumes before one request: both, in order). */
  add(text: string): void {
    this.pending = this.pending === null ? text : `${this.pending}\n\n${text}`;
  }

  /** The note not given yet, taken (an engine that hands it to its planner itself). */
  take(): string | null {
    const text = this.pending;
    this.pending = null;
    return text;
  }

  /** True when a note waits for the next request, or one was placed in the conversation. */
  get any(): boolean {
    return this.pending !== null || this.placed.length > 0;
  }

  /**
   * `items` (one model request's conversation) with every note at its place: a pending note at
   * the end, remembered at that index; a placed note at its index (at the end when the request
   * is shorter, as after a conversation was trimmed).
   */
  weave<T>(items: readonly T[], asMessage: (text: string) => T): T[] {
    if (this.pending !== null) {
      this.placed.push({ at: items.length, text: this.pending });
      this.pending = null;
    }
    if (this.placed.length === 0) return [...items];
    const out: T[] = [];
    let next = 0;
    for (let i = 0; i <= items.length; i++) {
      while (next < this.placed.length && Math.min(this.placed[next]!.at, items.length) === i)
        out.push(asMessage(this.placed[next++]!.text));
      if (i < items.length) out.push(items[i]!);
    }
    return out;
  }
}
