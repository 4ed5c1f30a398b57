/**
 * The re-applied edit rule's memory (docs/spec.md §3 "Workspace reports"): for each call (exact
 * fingerprint) whose workspace report said it changed the workspace, how many of its
 * applications in a row left the workspace larger than its previous application did — with
 * nothing else changing the workspace between (this report's `before` is the previous
 * application's `after`) — and the fingerprint and size the latest one left. An edit re-applied on top of itself (`cat >> f <<EOF` again, an
 * insert at the same line again) changes the workspace every time — so every call is progress
 * and every result is new — but the workspace only grows; a legitimate repeat (a re-run of a
 * generator, the same `sed -i` that now matches nothing) leaves the same size or no change.
 *
 * It lives outside the window on purpose: each application opens a new window (it is
 * progress), so the window's counts never see the repeat. Bounded: the newest
 * {@link REAPPLIED_KEPT} fingerprints are kept.
 */
import { workspaceReportSchema, type WorkspaceReport } from './schemas';

/** How many fingerprints the memory keeps (the oldest is forgotten first). */
export const REAPPLIED_KEPT = 32;

/** One call's growing applications. */
export interface ReappliedEntry {
  /** Applications in a row, each leaving the workspace larger than the one before. */
  times: number;
  /** The size the latest application left. */
  size: number;
  /** The workspace fingerprint the latest application left. */
  after: string;
}

/** The memory of one guard. */
export class ReappliedEdits {
  private entries = new Map<string, ReappliedEntry>();

  /** How many growing applications in a row `fingerprint` has (0: none known). */
  times(fingerprint: string): number {
    return this.entries.get(fingerprint)?.times ?? 0;
  }

  /**
   * Reads the workspace report of a call that ran (a SUCCESS's `workspace`) and records it:
   * true when it changed the workspace, false when it did not or there is none, and the words
   * for the StopReport when it cannot be read (a fingerprint that failed, a report off the schema).
   */
  observe(fingerprint: string, tool: string, report: unknown): boolean | string {
    if (report === undefined) return false;
    const parsed = workspaceReportSchema.safeParse(report);
    if (!parsed.success)
      return `workspace report of ${tool} does not fit the schema ({before, after, size} or {error})`;
    if ('error' in parsed.data) return `workspace fingerprint of ${tool} failed: ${parsed.data.error}`;
    this.record(fingerprint, parsed.data);
    return parsed.data.before !== parsed.data.after;
  }

  /**
   * Records a report of a call that ran: a change that starts where the call's previous
   * application left the workspace and grows it adds one; any other change starts again at one;
   * no change forgets it.
   */
  record(fingerprint: string, report: Extract<WorkspaceReport, { before: string }>): void {
    const prev = this.entries.get(fingerprint);
    this.entries.delete(fingerprint);
    if (report.before === report.after) return;
    const grew = prev !== undefined && report.before === prev.after && report.size > prev.size;
    this.entries.set(fingerprint, {
      times: grew ? prev.times + 1 : 1,
      size: report.size,
      after: report.after,
    });
    if (this.entries.size > REAPPLIED_KEPT) this.entries.delete(this.entries.keys().next().value!);
  }

  /** The memory as JSON (undefined when empty). */
  toJSON(): Array<[string, ReappliedEntry]> | undefined {
    return this.entries.size > 0 ? [...this.entries].map(([k, v]) => [k, { ...v }]) : undefined;
  }

  /** The guard state's `reapplied` key: present only when the memory holds something. */
  toStateJson(): { reapplied?: Array<[string, ReappliedEntry]> } {
    const j = this.toJSON();
    return j ? { reapplied: j } : {};
  }

  /** Restores a memory from {@link toJSON} output. */
  static fromJSON(state: ReadonlyArray<readonly [string, ReappliedEntry]> | undefined): ReappliedEdits {
    const m = new ReappliedEdits();
    for (const [k, v] of state ?? []) m.entries.set(k, { times: v.times, size: v.size, after: v.after });
    return m;
  }
}

/**
 * The workspace report a framework tool's output carries (the AI SDK and OpenAI Agents paths,
 * whose tools return plain output): its own `workspace` field when that fits the report schema
 * (`{before, after, size}` or `{error}`), as a result's `workspace`; anything else under that
 * name is the tool's own data and is left alone.
 */
export function workspaceOf(output: unknown): { workspace?: WorkspaceReport } {
  if (typeof output !== 'object' || output === null || !Object.hasOwn(output, 'workspace')) return {};
  const parsed = workspaceReportSchema.safeParse((output as { workspace: unknown }).workspace);
  return parsed.success ? { workspace: parsed.data } : {};
}
