/**
 * Marks in a run's event history for what the Timeline would otherwise not show: a call the guard
 * refused (nothing ran, so no activity tells of it), and a call that ran but did not simply
 * succeed (a FATAL result, a PRECONDITION, a RETRYABLE or PENDING answer) or was answered from the
 * ledger without running. A mark is the `markHistory` local activity, which does nothing: its
 * summary is the mark (one MarkerRecorded event in the same workflow task, no server round trip).
 * A healthy step that ran and succeeded gets no mark. The words are redacted and clipped: args
 * pass through `redact`, as in the trace. Workflow code.
 */
import { isCancellation, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/create-activities';
import type { BeforeOutcome } from '../core/step';
import type { RefusalAudit } from '../core/resume-check';
import { redact } from '../common/redact';
import type { ToolResult } from '../guard';

/** The most characters of a mark's summary (one line in the UI). */
const MARK_CHARS = 400;

function clipMark(text: string): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length > MARK_CHARS ? `${line.slice(0, MARK_CHARS)}…` : line;
}

/** Writes a mark: the `markHistory` local activity with the mark as its summary. */
export function historyMark(): (summary: string) => Promise<void> {
  const { markHistory } = proxyLocalActivities<Activities>({
    startToCloseTimeout: '10 seconds',
    retry: { maximumAttempts: 3 },
  });
  return async (summary) => {
    try {
      await markHistory.executeWithOptions({ summary: clipMark(summary) }, []);
    } catch (err) {
      // Only a mark: the run goes on without it, unless it is being cancelled.
      if (isCancellation(err)) throw err;
    }
  };
}

/** The refusal audit with its words on the Timeline: a refused resume or stop reads as one. */
export function summarisedAudit(audit: {
  executeWithOptions(o: { summary: string }, args: [RefusalAudit]): Promise<void>;
}): (a: RefusalAudit) => Promise<void> {
  return (a) => audit.executeWithOptions({ summary: clipMark(`${a.action} refused · ${a.reason}`) }, [a]);
}

/** The most characters of a call's args a mark shows (cut with a mark). */
const MARK_ARGS_CHARS = 160;

/** A call as a mark shows it: its tool and redacted, clipped args. */
export function callText(tool: string, args: unknown): string {
  const json = JSON.stringify(redact(args ?? null)) ?? 'null';
  return `${tool} ${json.length > MARK_ARGS_CHARS ? `${json.slice(0, MARK_ARGS_CHARS)}…` : json}`;
}

/** A call the guard refused before it ran. */
type Refusal = Extract<BeforeOutcome, { kind: 'steer' | 'stop' }>;

/** The mark of a call the guard refused before it ran (a steer or a stop). */
export function refusalMark(tool: string, args: unknown, out: Refusal): string {
  const reason = 'reason' in out.before ? out.before.reason : 'refused';
  const then = out.kind === 'steer' ? 'steered back to the model' : 'the run stops';
  return `refused ${callText(tool, args)} · ${reason} · not run, ${then}`;
}

/**
 * The mark of a call's outcome when it is not a plain success: null for a SUCCESS that ran (the
 * tool activity's own bar tells it). `cached`: answered from the ledger, not run again.
 */
export function outcomeMark(tool: string, result: ToolResult, cached: boolean): string | null {
  if (cached) return `${tool} answered from the ledger · already done, not run again`;
  if (result.kind === 'SUCCESS') return null;
  const code = 'code' in result && result.code ? ` ${result.code}` : '';
  return `${tool} → ${result.kind}${code}`;
}

/** Marks queued by synchronous code and written by the loop at its next await. */
export class HistoryMarks {
  private queued: string[] = [];

  constructor(private readonly write: (summary: string) => Promise<void>) {}

  /** True when a mark waits to be written. */
  get pending(): boolean {
    return this.queued.length > 0;
  }

  queue(summary: string | null): void {
    if (summary) this.queued.push(summary);
  }

  /** A call the guard refused: its mark queued, the turn's outcome answered. */
  refused(tool: string, args: unknown, out: Refusal): { readonly kind: Refusal['kind'] } {
    this.queue(refusalMark(tool, args, out));
    return { kind: out.kind };
  }

  /** Writes the queued marks; a mark that cannot be written is dropped (it is only a mark). */
  async flush(): Promise<void> {
    const marks = this.queued;
    this.queued = [];
    for (const m of marks) await this.write(m);
  }

  /** Writes one mark now. */
  now(summary: string): Promise<void> {
    return this.write(summary);
  }
}
