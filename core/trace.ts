/**
 * The run's trace (docs/spec.md §5): one record per decision, before and after, with args
 * redacted. The newest `limit` records are kept in the workflow (older ones stay in
 * history); `total` counts every record the run ever wrote, across continue-as-new.
 */
import { redact } from '../common/redact';
import { pageTrace, type TracePage, type TracePageArgs, type TraceRecord } from '../guard';

/** The fields a caller gives; the run fills in its id, step, clock and progress version. */
export type TraceFields = Omit<TraceRecord, 'run_id' | 'step' | 'at_ms' | 'progress_version'>;

/** Where a record is written: the run's id and the guard's counters at that moment. */
export interface TraceStamp {
  readonly runId: string;
  readonly step: number;
  readonly progressVersion: number;
}

/** A record with its position in the run's whole trace (0-based). */
export interface NumberedRecord {
  readonly seq: number;
  readonly record: TraceRecord;
}

/** A bounded, paged trace. */
export class RunTrace {
  private records: TraceRecord[];
  private written: number;
  /** Records past the limit not yet paged out (only while {@link keepLeaving} is on). */
  private leaving: NumberedRecord[] = [];
  /** Keep records that pass the limit until {@link leave} pages them out (a lean run). */
  keepLeaving = false;
  /** The last decision, as the UI's details and `status` show it. */
  lastDecision: string | null = null;

  constructor(
    private readonly limit: number,
    kept: readonly TraceRecord[] = [],
    total = 0,
  ) {
    this.records = [...kept];
    this.written = total;
  }

  /** Records written over the run's whole life. */
  get total(): number {
    return this.written;
  }

  /** Appends a record (workflow time; args redacted). */
  record(at: TraceStamp, rec: TraceFields): void {
    this.records.push({
      run_id: at.runId,
      step: at.step,
      at_ms: Date.now(),
      progress_version: at.progressVersion,
      ...rec,
      args: rec.args === undefined ? null : this.redacted(rec.args),
    });
    this.written += 1;
    if (this.records.length > this.limit) {
      const cut = this.records.length - this.limit;
      if (this.keepLeaving) {
        const first = this.written - this.records.length;
        this.records.slice(0, cut).forEach((record, i) => this.leaving.push({ seq: first + i, record }));
      }
      this.records = this.records.slice(cut);
    }
    this.lastDecision = rec.reason ? `${rec.decision} (${rec.reason})` : rec.decision;
  }

  /**
   * `args` redacted; the same args object as the last record's (a step's before and after) is
   * redacted once and shared — records are never changed once written (per-step CPU).
   */
  private redacted(args: unknown): unknown {
    const last = this.lastArgs;
    if (last !== null && last.raw === args) return last.redacted;
    const redacted = redact(args);
    this.lastArgs = { raw: args, redacted };
    return redacted;
  }

  /** The last args redacted (see {@link redacted}); not persisted. */
  private lastArgs: { readonly raw: unknown; readonly redacted: unknown } | null = null;

  /** The fields of a run-level record (signals, resumes, planner ends): no call attached. */
  static noteFields(
    decision: string,
    reason: string | null,
    extra: { tool?: string | null; fingerprint?: string | null; args?: unknown; error_code?: string } = {},
  ): TraceFields {
    return {
      phase: 'run',
      tool: extra.tool ?? null,
      fingerprint: extra.fingerprint ?? null,
      args: extra.args ?? null,
      result_kind: null,
      error_code: extra.error_code ?? null,
      operation_key: null,
      decision,
      reason,
    };
  }

  /** One page, filtered by decision and reason. */
  page(args: TracePageArgs = {}): TracePage {
    return pageTrace(this.records, this.written, args);
  }

  /** The newest `n` records whose decision is one of `decisions`, oldest first. */
  recent(decisions: readonly string[], n: number): TraceRecord[] {
    const out: TraceRecord[] = [];
    for (let i = this.records.length - 1; i >= 0 && out.length < n; i--) {
      const r = this.records[i]!;
      if (decisions.includes(r.decision)) out.push(r);
    }
    return out.reverse();
  }

  /**
   * The records that leave the trace when only its newest `kept` stay (a continue-as-new's
   * checkpoint), oldest first with their positions; the ones kept past the limit are handed
   * over once.
   */
  leave(kept: number): NumberedRecord[] {
    const first = this.written - this.records.length;
    const out = this.leaving;
    this.leaving = [];
    const n = Math.max(0, this.records.length - kept);
    for (let i = 0; i < n; i++) out.push({ seq: first + i, record: this.records[i]! });
    return out;
  }

  /** The newest `n` records (for a checkpoint). */
  newest(n: number): TraceRecord[] {
    return this.records.slice(-n);
  }
}
