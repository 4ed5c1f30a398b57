/**
 * The tenant spend store (docs/spec.md §7.10): before each model call the worst case
 * of its price is reserved under the tenant's cap, atomically across every worker sharing the
 * database; after the answer the actual cost settles the reservation. A reservation that
 * would cross the cap is refused (a `refused` row; nothing is sent). It lives in the ledger's
 * database (migration 7, storage/spend/schema.ts) on the ledger's own connection.
 *
 * **Atomic.** A reservation is one `transaction` unit: on PostgreSQL it locks the tenant's row
 * (`SELECT … FOR UPDATE`), so concurrent reservations of one tenant run one after another and
 * each sees every other's row; on SQLite the unit is `BEGIN IMMEDIATE` (the database write
 * lock). The sum and the insert are in the same unit.
 *
 * **The window** is rolling: what counts against the cap is every reservation made within the
 * last `windowMs` (settled ones at their actual cost, the others at their reserved worst case),
 * plus any reservation still in flight (its lease not over) however old.
 *
 * **Leases.** A reservation is in flight until `lease_until`. A worker that crashed never
 * settles its reservations: when their lease ends they stop being in flight, but they keep
 * counting at their worst case until they leave the window, because the model may have
 * billed the call before the crash. So a crash can make a tenant stop early; it can never make
 * the model servers bill more than the cap.
 */
import { randomUUID } from 'node:crypto';
import type { OperatorAuth } from '../../common/operator-auth';
import { SqlLedger, type Ledger, type LedgerDatabase, type LedgerTx } from '../ledger';
import { SpendInputError } from './errors';
import { DEFAULT_SPEND_WINDOW_MS, type SpendLimit, type SpendLimits } from './limits';

/** How long a reservation stays in flight by default (the planner's timeout and retries fit in it). */
export const DEFAULT_SPEND_LEASE_MS = 15 * 60_000;

/** Prefix of a raise's id (the signature's `requestId`). */
export const RAISE_ID_PREFIX = 'spr_';

/** A tenant's cap in force and where it comes from. */
export interface EffectiveCap extends SpendLimit {
  /** `config`: the worker's `AGENT_SPEND_LIMITS`; `raise`: an operator's raise (its id). */
  readonly source: 'config' | 'raise';
  readonly raiseId?: string;
}

/** What a reservation answers. */
export type Reservation =
  | { readonly kind: 'reserved'; readonly id: string; readonly cap: EffectiveCap | null }
  | {
      readonly kind: 'refused';
      readonly id: string;
      readonly cap: EffectiveCap;
      /** Counted against the cap in the window when the call was refused. */
      readonly usedUsd: number;
      /** Why, in words (names the tenant, the cap, the window and the amount). */
      readonly detail: string;
    };

/** A tenant's spend as `agentctl spend status` shows it. */
export interface SpendStatus {
  readonly tenant: string;
  readonly cap: EffectiveCap | null;
  /** Settled cost of the calls reserved within the window. */
  readonly settledUsd: number;
  /** Worst case of the reservations in flight (reserved, not settled, lease not over). */
  readonly inFlightUsd: number;
  /** Worst case of reservations whose lease ended unsettled (a crashed worker), within the window. */
  readonly expiredUsd: number;
  /** All that counts against the cap now. */
  readonly usedUsd: number;
  /** What is left under the cap (null: no cap). */
  readonly availableUsd: number | null;
  readonly calls: { readonly settled: number; readonly inFlight: number; readonly refused: number };
}

/** An operator's raise of a tenant's cap. */
export interface RaiseInput {
  /** The raise's id (the signature's `requestId`); default a fresh one. */
  readonly id?: string;
  readonly tenant: string;
  readonly maxUsd: number;
  /** The window of the raised cap; default the configured one, else one day. */
  readonly windowMs?: number;
  readonly actor: string;
  readonly reason: string;
  readonly auth?: OperatorAuth | null;
}

/** A stored raise, as the verifier sees it. */
export interface RaiseRecord {
  readonly id: string;
  readonly tenant: string;
  readonly maxUsd: number;
  readonly windowMs: number;
  readonly actor: string;
  readonly reason: string;
  readonly createdAt: string;
  readonly auth: OperatorAuth | null;
}

/** Null when a stored raise is trusted, else why not (the worker's operators decide). */
export type RaiseVerifier = (raise: RaiseRecord) => string | null;

interface Sums {
  settled: number | string | null;
  in_flight: number | string | null;
  expired: number | string | null;
  n_settled: number | string;
  n_in_flight: number | string;
  n_refused: number | string;
}

interface CapRow {
  id: string;
  tenant: string;
  max_usd: number | string;
  window_ms: number | string;
  actor: string;
  reason: string;
  created_at: unknown;
  signed_by: string | null;
  signed_at_ms: number | string | null;
  signature: string | null;
}

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));

/** The spend store over the ledger's database. */
export class SpendStore {
  private constructor(
    private readonly db: LedgerDatabase,
    private readonly limits: SpendLimits,
    private readonly leaseMs: number,
    private readonly verifier: RaiseVerifier | null,
  ) {}

  /** The store in a SQL ledger's database; throws for a ledger without one. */
  static over(
    ledger: Ledger,
    limits: SpendLimits,
    opts: { leaseMs?: number; verifier?: RaiseVerifier } = {},
  ): SpendStore {
    if (!(ledger instanceof SqlLedger)) throw new SpendInputError('the spend store needs a SQL ledger');
    return new SpendStore(
      ledger.database(),
      limits,
      opts.leaseMs ?? DEFAULT_SPEND_LEASE_MS,
      opts.verifier ?? null,
    );
  }

  /** The same store, trusting only raises `verifier` accepts. */
  verifiedBy(verifier: RaiseVerifier): SpendStore {
    return new SpendStore(this.db, this.limits, this.leaseMs, verifier);
  }

  /**
   * Reserves `worstUsd` for one model call of `runId` under `tenant`'s cap, or refuses it when
   * the window's spend plus it would cross the cap. `worstUsd` null (a model without a price)
   * is refused under a cap. A tenant without a cap is never refused; its calls are recorded.
   */
  async reserve(tenant: string, runId: string, model: string, worstUsd: number | null): Promise<Reservation> {
    if (worstUsd !== null && (!Number.isFinite(worstUsd) || worstUsd < 0))
      throw new SpendInputError(`worstUsd must be a finite number ≥ 0, got ${worstUsd}`);
    const id = `rsv_${randomUUID()}`;
    const { db } = this;
    return db.unit('transaction', async (tx) => {
      if (db.backend === 'postgres') {
        // The tenant's row is the lock every reservation of the tenant takes, on every worker.
        await tx.run('INSERT INTO agent_spend_tenants (tenant) VALUES (?) ON CONFLICT DO NOTHING', [tenant]);
        await tx.get('SELECT tenant FROM agent_spend_tenants WHERE tenant = ? FOR UPDATE', [tenant]);
      }
      const cap = await this.capIn(tx, tenant);
      const insert = (state: 'reserved' | 'refused') =>
        tx.run(
          `INSERT INTO agent_spend_reservations (id, tenant, run_id, model, state, reserved_usd, created_at, lease_until)
           VALUES (?, ?, ?, ?, ?, ?, ${db.now}, ${db.now} + ${db.ms('?')})`,
          [id, tenant, runId, model, state, worstUsd, this.leaseMs],
        );
      if (cap === null) {
        await insert('reserved');
        return { kind: 'reserved', id, cap: null };
      }
      const usedUsd = (await this.sumsIn(tx, tenant, cap.windowMs)).used;
      const refusal = (detail: string): Reservation => ({ kind: 'refused', id, cap, usedUsd, detail });
      if (worstUsd === null) {
        await insert('refused');
        return refusal(`model "${model}" has no price, and tenant "${tenant}" has a cap of $${cap.maxUsd}`);
      }
      if (usedUsd + worstUsd > cap.maxUsd) {
        await insert('refused');
        return refusal(
          `tenant "${tenant}" has used $${round(usedUsd)} of its $${cap.maxUsd} cap in the last ${cap.windowMs} ms, ` +
            `and the next ${model} call could cost up to $${worstUsd}: the model was not called`,
        );
      }
      await insert('reserved');
      return { kind: 'reserved', id, cap };
    });
  }

  /** Charges a reservation's actual cost (USD). A reservation settles once; later calls change nothing. */
  async settle(id: string, actualUsd: number): Promise<boolean> {
    if (!Number.isFinite(actualUsd) || actualUsd < 0)
      throw new SpendInputError(`actualUsd must be a finite number ≥ 0, got ${actualUsd}`);
    const { changes } = await this.db.unit('write', (tx) =>
      tx.run(
        `UPDATE agent_spend_reservations SET state = 'settled', actual_usd = ?, settled_at = ${this.db.now}
         WHERE id = ? AND state = 'reserved'`,
        [actualUsd, id],
      ),
    );
    return changes === 1;
  }

  /** A tenant's spend now. */
  async status(tenant: string): Promise<SpendStatus> {
    return this.db.unit('read', async (tx) => {
      const cap = await this.capIn(tx, tenant);
      const s = await this.sumsIn(tx, tenant, cap?.windowMs ?? DEFAULT_SPEND_WINDOW_MS);
      return {
        tenant,
        cap,
        settledUsd: round(s.settled),
        inFlightUsd: round(s.inFlight),
        expiredUsd: round(s.expired),
        usedUsd: round(s.used),
        availableUsd: cap ? round(Math.max(0, cap.maxUsd - s.used)) : null,
        calls: s.calls,
      };
    });
  }

  /**
   * Whether the tenant's window has room again for the call `runId` was last refused (the
   * lift rule of a `spend_limit` stop): null when it has, else why not.
   */
  async roomFor(runId: string): Promise<{ ok: boolean; detail: string }> {
    const refused = await this.db.unit('read', (tx) =>
      tx.get<{ tenant: string; reserved_usd: number | string | null; model: string }>(
        `SELECT tenant, reserved_usd, model FROM agent_spend_reservations WHERE run_id = ? AND state = 'refused'
         ORDER BY created_at DESC, id DESC LIMIT 1`,
        [runId],
      ),
    );
    if (!refused) return { ok: true, detail: 'no refused call of this run is on record' };
    const st = await this.status(refused.tenant);
    if (st.availableUsd === null) return { ok: true, detail: `tenant "${st.tenant}" has no cap now` };
    if (refused.reserved_usd === null)
      return {
        ok: true,
        detail: `the refused ${refused.model} call had no price; the planner is asked again (it stops again until the model has a price)`,
      };
    const need = Number(refused.reserved_usd);
    return need <= st.availableUsd
      ? {
          ok: true,
          detail: `tenant "${st.tenant}" has $${st.availableUsd} left, the call needs up to $${need}`,
        }
      : {
          ok: false,
          detail:
            `tenant "${st.tenant}" has $${st.availableUsd} left of its $${st.cap?.maxUsd} cap and the refused call ` +
            `needs up to $${need}: wait for the window (${st.cap?.windowMs} ms) or raise the cap (agentctl spend raise)`,
        };
  }

  /** Stores an operator's raise of a tenant's cap; the newest trusted raise is the cap in force. */
  async raise(input: RaiseInput): Promise<RaiseRecord> {
    if (!Number.isFinite(input.maxUsd) || input.maxUsd < 0)
      throw new SpendInputError(`maxUsd must be a finite number ≥ 0, got ${input.maxUsd}`);
    if (input.windowMs !== undefined && (!Number.isInteger(input.windowMs) || input.windowMs <= 0))
      throw new SpendInputError(`windowMs must be an integer > 0, got ${input.windowMs}`);
    if (!input.actor.trim()) throw new SpendInputError('actor is required');
    if (!input.reason.trim()) throw new SpendInputError('reason is required');
    const id = input.id ?? `${RAISE_ID_PREFIX}${randomUUID()}`;
    const windowMs = input.windowMs ?? this.limits[input.tenant]?.windowMs ?? DEFAULT_SPEND_WINDOW_MS;
    const a = input.auth ?? null;
    return this.db.unit('transaction', async (tx) => {
      await tx.run(
        `INSERT INTO agent_spend_caps (id, tenant, max_usd, window_ms, actor, reason, created_at, signed_by, signed_at_ms, signature)
         VALUES (?, ?, ?, ?, ?, ?, ${this.db.now}, ?, ?, ?)`,
        [
          id,
          input.tenant,
          input.maxUsd,
          windowMs,
          input.actor,
          input.reason,
          a?.operator ?? null,
          a?.issuedAtMs ?? null,
          a?.signature ?? null,
        ],
      );
      const row = await tx.get<CapRow>('SELECT * FROM agent_spend_caps WHERE id = ?', [id]);
      return this.decodeCap(row as CapRow);
    });
  }

  /** The tenant's cap in force: its newest trusted raise, else the configured one, else none. */
  private async capIn(tx: LedgerTx, tenant: string): Promise<EffectiveCap | null> {
    const rows = await tx.all<CapRow>(
      'SELECT * FROM agent_spend_caps WHERE tenant = ? ORDER BY created_at DESC, id DESC LIMIT 20',
      [tenant],
    );
    for (const row of rows) {
      const raise = this.decodeCap(row);
      if (this.verifier && this.verifier(raise) !== null) continue;
      return { maxUsd: raise.maxUsd, windowMs: raise.windowMs, source: 'raise', raiseId: raise.id };
    }
    const configured = this.limits[tenant];
    return configured ? { ...configured, source: 'config' } : null;
  }

  /** What counts against the cap now (see the module comment), split by kind. */
  private async sumsIn(tx: LedgerTx, tenant: string, windowMs: number) {
    const { now } = this.db;
    const live = `state = 'reserved' AND lease_until > ${now}`;
    const inWindow = `created_at > ${now} - ${this.db.ms('?')}`;
    const row = await tx.get<Sums>(
      `SELECT
         SUM(CASE WHEN state = 'settled' AND ${inWindow} THEN actual_usd ELSE 0 END) AS settled,
         SUM(CASE WHEN ${live} THEN reserved_usd ELSE 0 END) AS in_flight,
         SUM(CASE WHEN state = 'reserved' AND NOT (lease_until > ${now}) AND ${inWindow} THEN reserved_usd ELSE 0 END) AS expired,
         SUM(CASE WHEN state = 'settled' AND ${inWindow} THEN 1 ELSE 0 END) AS n_settled,
         SUM(CASE WHEN ${live} THEN 1 ELSE 0 END) AS n_in_flight,
         SUM(CASE WHEN state = 'refused' AND ${inWindow} THEN 1 ELSE 0 END) AS n_refused
       FROM agent_spend_reservations WHERE tenant = ? AND created_at > ${now} - ${this.db.ms('?')}`,
      // Only rows that can still count are read (an index range, however long the history):
      // those within the window, and those whose lease may not be over yet.
      [windowMs, windowMs, windowMs, windowMs, tenant, Math.max(windowMs, this.leaseMs)],
    );
    const settled = num(row?.settled);
    const inFlight = num(row?.in_flight);
    const expired = num(row?.expired);
    return {
      settled,
      inFlight,
      expired,
      used: settled + inFlight + expired,
      calls: { settled: num(row?.n_settled), inFlight: num(row?.n_in_flight), refused: num(row?.n_refused) },
    };
  }

  private decodeCap(r: CapRow): RaiseRecord {
    return {
      id: r.id,
      tenant: r.tenant,
      maxUsd: Number(r.max_usd),
      windowMs: Number(r.window_ms),
      actor: r.actor,
      reason: r.reason,
      createdAt: this.db.isoTime(r.created_at) as string,
      auth:
        r.signed_by && r.signature && r.signed_at_ms !== null
          ? { operator: r.signed_by, issuedAtMs: Number(r.signed_at_ms), signature: r.signature }
          : null,
    };
  }
}

/** USD rounded to 1e-10 (no float dust in what is shown). */
function round(usd: number): number {
  return Math.round(usd * 1e10) / 1e10;
}
