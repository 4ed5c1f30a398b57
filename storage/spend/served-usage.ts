/**
 * Served usage: every model request of a run, recorded in the ledger's database
 * outside the plan activity's attempt — before it is sent (at its worst case) and as soon as its
 * reply arrives (at what it is counted) — so a reply the server answered is charged to the run
 * whether or not the attempt that asked for it completes (a timeout, a cancellation, a worker
 * killed mid-turn, an unreadable reply). Migration 11 (storage/spend/schema.ts).
 *
 * **Who carries a row to the workflow.** The plan activity's outcome (its turn, or its final
 * failure's details) carries the usage of every row it {@link TurnUsage.claim}s: its own turn's
 * rows of every attempt, plus any row of this run no activity carried yet (an earlier turn whose
 * last attempt was killed). A retry un-claims its turn's rows first ({@link TurnUsage.begin}):
 * the workflow only ever sees the last attempt's outcome, so each row is counted exactly once.
 *
 * **What a row counts.** `answered`: the reply's usage as counted (usage-basis.ts); `failed`: 0
 * for an answer that was an HTTP error (not billed), else the worst case (the provider may have
 * billed a request it never answered); `sent` (no outcome recorded: the worker died between the
 * request and its record): the worst case. Never zero for a request that may have been billed.
 */
import { randomUUID } from 'node:crypto';
import type { Usage } from '../../guard/schemas';
import { SqlLedger, type Ledger, type LedgerDatabase } from '../ledger';

/** How one request was counted (see usage-basis.ts in planners/). */
export type UsageBasis =
  'reported' | 'estimated' | 'above_bound' | 'unanswered' | 'error_answer' | 'unrecorded';

/** A request of an earlier attempt of the same turn whose reply arrived. */
export interface EarlierReply {
  readonly attempt: number;
  /** `truncated`: cut off at `maxTokens`; `unreadable`: answered but not readable; else `done`/`other`. */
  readonly finish: string | null;
  readonly maxTokens: number;
  readonly elapsedMs: number | null;
}

/** What the earlier attempts of a turn did. */
export interface EarlierAttempts {
  /** Requests sent by earlier attempts (answered or not). */
  readonly requests: number;
  /** Their newest answered request, if any. */
  readonly lastReply: EarlierReply | null;
}

/** What a claim carries to the workflow. */
export interface ClaimedUsage extends Usage {
  /** Requests in the claim (this turn's, every attempt, plus orphans). */
  readonly requests: number;
  /** Of them, rows of earlier turns no activity had carried (a killed last attempt). */
  readonly orphans: number;
  /** Of them, rows counted at their worst case (no usage recorded, or no answer). */
  readonly estimated: number;
}

/** One plan activity's view of its turn's rows. */
export interface TurnUsage {
  /** Un-claims this turn's rows: a new attempt's outcome replaces the last one's. */
  begin(): Promise<void>;
  /** What earlier attempts of this turn sent and what their last reply was. */
  earlier(): Promise<EarlierAttempts>;
  /** Records a request about to be sent: its worst case; returns the row's id. */
  sent(worst: { tokens: number; costUsd: number | null }, maxTokens: number): Promise<string>;
  /** Records the request's end: what it is counted at, why, and how the reply ended. */
  ended(id: string, o: RequestEnd): Promise<void>;
  /** Claims this turn's rows and this run's unclaimed ones; answers their sum. */
  claim(): Promise<ClaimedUsage>;
}

/** How a request ended, as recorded. */
export interface RequestEnd {
  readonly state: 'answered' | 'failed';
  readonly usage: Usage;
  readonly basis: UsageBasis;
  readonly finish?: string | null;
  readonly elapsedMs: number;
}

interface SumRow {
  tokens: number | string | null;
  cost: number | string | null;
  n: number | string;
  orphans: number | string | null;
  estimated: number | string | null;
}

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));

/** The served-usage rows in a SQL ledger's database. */
export class ServedUsageStore {
  private constructor(private readonly db: LedgerDatabase) {}

  /** The store in a SQL ledger's database; null for a ledger without one. */
  static over(ledger: Ledger): ServedUsageStore | null {
    return ledger instanceof SqlLedger ? new ServedUsageStore(ledger.database()) : null;
  }

  /** The rows of one scheduled plan activity (`turnKey`, shared by its retries) at `attempt`. */
  turn(runId: string, turnKey: string, attempt: number): TurnUsage {
    const { db } = this;
    return {
      begin: async () => {
        await db.unit('write', (tx) =>
          tx.run('UPDATE agent_served_usage SET delivered_to = NULL WHERE run_id = ? AND delivered_to = ?', [
            runId,
            turnKey,
          ]),
        );
      },
      earlier: async () =>
        db.unit('read', async (tx) => {
          const rows = await tx.all<{
            attempt: number | string;
            state: string;
            finish: string | null;
            max_tokens: number | string;
            elapsed_ms: number | string | null;
          }>(
            `SELECT attempt, state, finish, max_tokens, elapsed_ms FROM agent_served_usage
             WHERE run_id = ? AND turn_key = ? AND attempt < ? ORDER BY attempt, created_at`,
            [runId, turnKey, attempt],
          );
          const answered = rows.filter((r) => r.state === 'answered');
          const last = answered[answered.length - 1];
          return {
            requests: rows.length,
            lastReply: last
              ? {
                  attempt: num(last.attempt),
                  finish: last.finish,
                  maxTokens: num(last.max_tokens),
                  elapsedMs: last.elapsed_ms === null ? null : num(last.elapsed_ms),
                }
              : null,
          };
        }),
      sent: async (worst, maxTokens) => {
        const id = `srv_${randomUUID()}`;
        await db.unit('write', (tx) =>
          tx.run(
            `INSERT INTO agent_served_usage (id, run_id, turn_key, attempt, state, max_tokens, worst_tokens, worst_usd, created_at)
             VALUES (?, ?, ?, ?, 'sent', ?, ?, ?, ${db.now})`,
            [id, runId, turnKey, attempt, maxTokens, worst.tokens, worst.costUsd],
          ),
        );
        return id;
      },
      ended: async (id, o) => {
        await db.unit('write', (tx) =>
          tx.run(
            `UPDATE agent_served_usage SET state = ?, tokens = ?, cost_usd = ?, basis = ?, finish = ?, elapsed_ms = ?
             WHERE id = ? AND state = 'sent'`,
            [
              o.state,
              o.usage.tokens,
              o.usage.costUsd,
              o.basis,
              o.finish ?? null,
              Math.round(o.elapsedMs),
              id,
            ],
          ),
        );
      },
      claim: async () =>
        db.unit('transaction', async (tx) => {
          await tx.run(
            `UPDATE agent_served_usage SET delivered_to = ?
             WHERE run_id = ? AND (turn_key = ? OR delivered_to IS NULL)`,
            [turnKey, runId, turnKey],
          );
          // A row without a recorded end counts at its worst case (its cost 0 without a price).
          const row = await tx.get<SumRow>(
            `SELECT SUM(CASE WHEN state = 'sent' THEN worst_tokens ELSE tokens END) AS tokens,
                    SUM(CASE WHEN state = 'sent' THEN COALESCE(worst_usd, 0) ELSE COALESCE(cost_usd, 0) END) AS cost,
                    COUNT(*) AS n,
                    SUM(CASE WHEN turn_key <> ? THEN 1 ELSE 0 END) AS orphans,
                    SUM(CASE WHEN state = 'sent' OR basis IN ('estimated', 'unanswered') THEN 1 ELSE 0 END) AS estimated
             FROM agent_served_usage WHERE run_id = ? AND delivered_to = ?`,
            [turnKey, runId, turnKey],
          );
          return {
            tokens: num(row?.tokens),
            costUsd: Math.round(num(row?.cost) * 1e10) / 1e10,
            requests: num(row?.n),
            orphans: num(row?.orphans),
            estimated: num(row?.estimated),
          };
        }),
    };
  }

  /** Every row of a run, oldest first (tests, `agentctl`-style inspection). */
  async rows(runId: string): Promise<Record<string, unknown>[]> {
    return this.db.unit('read', (tx) =>
      tx.all('SELECT * FROM agent_served_usage WHERE run_id = ? ORDER BY created_at, id', [runId]),
    );
  }
}
