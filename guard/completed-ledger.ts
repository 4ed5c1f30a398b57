/**
 * The loop guard's completed ledger (docs/spec.md §3 rule 8, §7.10): which operation keys have
 * completed, and with which fingerprint. Without a ledger window every key is kept exactly; with
 * one (a lean run, `LoopGuard.useLedgerWindow`), ledger-backed keys are kept among the newest
 * `keep` only — the persistent ledger hands a key back before it is proposed again
 * (`LoopGuard.markCompleted`), so no decision depends on what was forgotten. Pure and
 * deterministic, like the guard.
 */
import type { GuardStateJson } from './guard-state';

/** A completed key as the guard's options give it: the key alone (any fingerprint) or key and fingerprint. */
export type CompletedEntry = string | readonly [string, string | null];

/** The completed operation keys of one guard: the exact ones, and the ledger window's newest. */
export class CompletedLedger {
  /** Operation key → fingerprint that completed it (null: any). Kept exactly. */
  private exact = new Map<string, string | null>();
  /** The ledger window, when the run has one: the newest ledger-backed keys, oldest first. */
  private recent: Map<string, string | null> | null = null;
  private keep = 0;
  /** Ledger-backed keys this run completed itself (with a ledger window). */
  private total = 0;

  constructor(entries: Iterable<CompletedEntry> = []) {
    for (const entry of entries) {
      if (typeof entry === 'string') this.exact.set(entry, null);
      else this.exact.set(entry[0], entry[1]);
    }
  }

  /** The keys held, in the order they completed: the exact ones first, then the window's newest. */
  keys(): string[] {
    const exact = [...this.exact.keys()];
    return this.recent ? [...exact, ...this.recent.keys()] : exact;
  }

  /** Whether the key is held as completed. */
  has(key: string): boolean {
    return this.exact.has(key) || (this.recent?.has(key) ?? false);
  }

  /** The fingerprint that completed a held key (null: any; undefined: not held). */
  owner(key: string): string | null | undefined {
    return this.exact.has(key) ? this.exact.get(key) : this.recent?.get(key);
  }

  /** Every key held, or with a ledger window the exact keys plus the ledger-backed keys completed here. */
  get completedTotal(): number {
    return this.exact.size + (this.recent ? this.total : 0);
  }

  /** How many ledger-backed keys are kept (null: no ledger window, every key is kept). */
  get window(): number | null {
    return this.recent ? this.keep : null;
  }

  /** Opens the ledger window of `keep` keys (`keep` already checked); no-op when there is one. */
  useWindow(keep: number): void {
    if (this.recent) return;
    this.recent = new Map();
    this.keep = keep;
  }

  /** A key this run completed itself (after a SUCCESS). */
  complete(key: string, fingerprint: string, ledgerBacked: boolean): void {
    if (this.recent && ledgerBacked) {
      this.keepRecent(key, fingerprint);
      this.total += 1;
    } else this.exact.set(key, fingerprint);
  }

  /** A key the persistent ledger knows completed; with a ledger window it joins the newest. */
  mark(key: string, fingerprint: string | null): void {
    if (this.has(key)) return;
    if (this.recent) this.keepRecent(key, fingerprint);
    else this.exact.set(key, fingerprint);
  }

  /** The ledger as the parts of the guard's JSON state (`completed`, and `ledgerCompleted` with a window). */
  toJSON(): Pick<GuardStateJson, 'completed' | 'ledgerCompleted'> {
    return {
      completed: [...this.exact],
      ...(this.recent
        ? { ledgerCompleted: { keep: this.keep, recent: [...this.recent], total: this.total } }
        : {}),
    };
  }

  /** Restores the ledger from {@link toJSON} output. */
  static fromJSON(state: Pick<GuardStateJson, 'completed' | 'ledgerCompleted'>): CompletedLedger {
    const ledger = new CompletedLedger(state.completed);
    if (state.ledgerCompleted) {
      ledger.recent = new Map(state.ledgerCompleted.recent);
      ledger.keep = state.ledgerCompleted.keep;
      ledger.total = state.ledgerCompleted.total;
    }
    return ledger;
  }

  /** Keeps a ledger-backed key among the newest, forgetting the oldest beyond the window. */
  private keepRecent(key: string, fingerprint: string | null): void {
    const recent = this.recent!;
    recent.set(key, fingerprint);
    if (recent.size > this.keep) recent.delete(recent.keys().next().value as string);
  }
}
