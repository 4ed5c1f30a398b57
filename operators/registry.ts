/**
 * The operators a worker trusts, their keys and what their roles allow (docs/spec.md §7.3).
 * Loaded from `AGENT_OPERATORS_FILE`; without one the worker runs in **open** mode (every
 * request is accepted as the actor it names, and marked unverified) — for a laptop, never
 * for production, and the worker says so at start.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  signedPayload,
  type OperatorAction,
  type OperatorAuth,
  type SignedFields,
} from '../common/operator-auth';
import { BUDGET_RAISE_KEY } from '../guard';

/** How far a signature's time may be from the worker's clock. */
export const MAX_SIGNATURE_SKEW_MS = 5 * 60_000;

const budgetLimits = z
  .object({
    maxSteps: z.number().positive().optional(),
    maxMs: z.number().positive().optional(),
    maxTokens: z.number().positive().optional(),
    maxCostUsd: z.number().positive().optional(),
    maxWaitPolls: z.number().positive().optional(),
  })
  .strict();

const roleSchema = z
  .object({
    /** Stop reasons this role may lift with a resume (`*` for all). */
    lift: z.array(z.string().min(1)).default([]),
    /** The highest value this role may raise each budget to (absent: may not raise it). */
    raise: budgetLimits.default({}),
    /** May use the kill switch. */
    stop: z.boolean().default(false),
    /** May approve or deny high-risk calls. */
    approve: z.boolean().default(false),
    /**
     * The highest tenant spend cap (USD) this role may set with `agentctl spend raise`
     * (absent: may not raise a tenant's cap).
     */
    raiseSpendUsd: z.number().positive().optional(),
  })
  .strict();

/** The operators file. */
export const operatorsFileSchema = z
  .object({
    operators: z.record(
      z.string().min(1),
      z
        .object({
          /** Ed25519 public key, PEM (SPKI). */
          publicKey: z.string().min(1),
          roles: z.array(z.string().min(1)).min(1),
        })
        .strict(),
    ),
    roles: z.record(z.string().min(1), roleSchema),
  })
  .strict();
/** The operators file as written. */
export type OperatorsFile = z.input<typeof operatorsFileSchema>;
type Role = z.output<typeof roleSchema>;

/** A request to check: what it asks, of which run, with which fields and signature. */
export interface OperatorCheck {
  readonly action: OperatorAction;
  readonly workflowId: string;
  readonly fields: SignedFields;
  readonly auth?: OperatorAuth | null;
  /** For a resume: the reason of the stop it would lift. */
  readonly stopReason?: string | null;
  /**
   * How the signature's age is judged. `skew` (default, resume and stop): the signing time
   * must be within {@link MAX_SIGNATURE_SKEW_MS} of the worker's clock. `signed-expiry`
   * (approvals, which may wait for hours): any past signing time, but the signed
   * `fields.expiresAtMs` must be present and still ahead of the worker's clock. `stored`
   * (a raise of a tenant's spend cap, in force until a newer one): any past signing time.
   */
  readonly freshness?: 'skew' | 'signed-expiry' | 'stored';
}

/** The verdict. */
export interface OperatorVerdict {
  readonly ok: boolean;
  /** `verified`: a valid signature of a configured operator; `open`: no operators configured. */
  readonly mode: 'verified' | 'open';
  /** Who asked (the verified operator id, or the claimed actor in open mode). */
  readonly operator: string;
  readonly detail: string;
}

/** A refused request's verdict. */
const refuse = (operator: string, detail: string): OperatorVerdict => ({
  ok: false,
  mode: 'verified',
  operator,
  detail,
});

/** The worker's operators, or open mode. */
export class OperatorRegistry {
  private readonly keys = new Map<string, KeyObject>();

  private constructor(
    private readonly file: z.output<typeof operatorsFileSchema> | null,
    private readonly now: () => number,
  ) {
    for (const [id, op] of Object.entries(file?.operators ?? {})) {
      try {
        const key = createPublicKey(op.publicKey);
        if (key.asymmetricKeyType !== 'ed25519') throw new Error(`is ${key.asymmetricKeyType}, not ed25519`);
        this.keys.set(id, key);
      } catch (err) {
        throw new TypeError(`operators file: operators.${id}.publicKey: ${(err as Error).message}`);
      }
      for (const role of op.roles) {
        if (!file?.roles[role])
          throw new TypeError(`operators file: operators.${id}.roles: unknown role "${role}"`);
      }
    }
  }

  /** Open mode: no operators configured. */
  static open(): OperatorRegistry {
    return new OperatorRegistry(null, Date.now);
  }

  /** From a parsed operators file. */
  static fromFile(value: unknown, now: () => number = Date.now): OperatorRegistry {
    const parsed = operatorsFileSchema.safeParse(value);
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      throw new TypeError(`operators file: ${i?.path.join('.') || '(root)'}: ${i?.message ?? 'invalid'}`);
    }
    return new OperatorRegistry(parsed.data, now);
  }

  /** From `AGENT_OPERATORS_FILE`, else open mode. */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): OperatorRegistry {
    const path = env.AGENT_OPERATORS_FILE;
    if (!path) return OperatorRegistry.open();
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new TypeError(
        `AGENT_OPERATORS_FILE ${path}: cannot read (${(err as NodeJS.ErrnoException).code})`,
      );
    }
    try {
      return OperatorRegistry.fromFile(JSON.parse(text));
    } catch (err) {
      throw new TypeError(`AGENT_OPERATORS_FILE ${path}: ${(err as Error).message}`);
    }
  }

  /** True when no operators are configured. */
  get isOpen(): boolean {
    return this.file === null;
  }

  /** Checks a request's signature and the operator's authority for it. */
  check(c: OperatorCheck): OperatorVerdict {
    if (!this.file) {
      return {
        ok: true,
        mode: 'open',
        operator: c.fields.actor,
        detail: 'open mode: no operators configured',
      };
    }
    const auth = c.auth;
    if (!auth)
      return refuse(c.fields.actor, `unsigned ${c.action} refused: this worker requires a signed request`);
    const key = this.keys.get(auth.operator);
    if (!key) return refuse(auth.operator, `unknown operator "${auth.operator}"`);
    if (auth.operator !== c.fields.actor)
      return refuse(
        auth.operator,
        `actor "${c.fields.actor}" does not match the signing operator "${auth.operator}"`,
      );
    const stale =
      c.freshness === 'signed-expiry'
        ? this.pastExpiry(c.fields, auth)
        : c.freshness === 'stored'
          ? this.fromTheFuture(auth)
          : this.skewed(auth);
    if (stale) return refuse(auth.operator, stale);
    const payload = signedPayload(c.action, c.workflowId, c.fields, auth.issuedAtMs);
    let valid = false;
    try {
      valid = verify(null, Buffer.from(payload), key, Buffer.from(auth.signature, 'base64'));
    } catch {
      valid = false;
    }
    if (!valid)
      return refuse(
        auth.operator,
        'bad signature (the request was altered, or signed for another run or action)',
      );
    const roles = this.rolesOf(auth.operator);
    const denied = this.authorise(c, roles);
    if (denied) return refuse(auth.operator, denied);
    return {
      ok: true,
      mode: 'verified',
      operator: auth.operator,
      detail: `verified operator ${auth.operator}`,
    };
  }

  /** Null when the signing time is within the skew window, else why not. */
  private skewed(auth: OperatorAuth): string | null {
    const skew = Math.abs(this.now() - auth.issuedAtMs);
    return skew > MAX_SIGNATURE_SKEW_MS
      ? `signature expired or from the future (${Math.round(skew / 1000)} s off)`
      : null;
  }

  /** Null unless the signing time is ahead of the worker's clock by more than the skew. */
  private fromTheFuture(auth: OperatorAuth): string | null {
    const ahead = auth.issuedAtMs - this.now();
    return ahead > MAX_SIGNATURE_SKEW_MS
      ? `signature from the future (${Math.round(ahead / 1000)} s ahead)`
      : null;
  }

  /** Null when the signed expiry is still ahead (and the signature not from the future), else why not. */
  private pastExpiry(fields: SignedFields, auth: OperatorAuth): string | null {
    const now = this.now();
    if (fields.expiresAtMs === undefined) return 'the signature covers no expiry';
    if (auth.issuedAtMs - now > MAX_SIGNATURE_SKEW_MS)
      return `signature from the future (${Math.round((auth.issuedAtMs - now) / 1000)} s ahead)`;
    return now >= fields.expiresAtMs
      ? `expired at ${new Date(fields.expiresAtMs).toISOString()} (signed expiry)`
      : null;
  }

  private rolesOf(operator: string): Role[] {
    const names = this.file?.operators[operator]?.roles ?? [];
    return names.map((n) => this.file?.roles[n]).filter((r): r is Role => r !== undefined);
  }

  /** Null when the roles allow the request, else why not. */
  private authorise(c: OperatorCheck, roles: Role[]): string | null {
    const who = c.fields.actor;
    switch (c.action) {
      case 'stop':
        return roles.some((r) => r.stop) ? null : `operator ${who} may not stop runs`;
      case 'approve':
      case 'deny':
        return roles.some((r) => r.approve) ? null : `operator ${who} may not approve or deny calls`;
      case 'raise_spend': {
        const value = c.fields.raise?.maxUsd ?? Infinity;
        const limit = Math.max(0, ...roles.map((r) => r.raiseSpendUsd ?? 0));
        if (limit === 0) return `operator ${who} may not raise a tenant's spend cap`;
        return value > limit
          ? `operator ${who} may raise a tenant's spend cap to at most $${limit}, not $${value}`
          : null;
      }
      case 'resume': {
        const reason = c.stopReason ?? '';
        if (!roles.some((r) => r.lift.includes('*') || r.lift.includes(reason)))
          return `operator ${who} may not lift a ${reason} stop`;
        for (const [key, value] of Object.entries(c.fields.raise ?? {})) {
          if (value === undefined) continue;
          const limit = Math.max(0, ...roles.map((r) => r.raise[key as keyof Role['raise']] ?? 0));
          if (value > limit)
            return limit > 0
              ? `operator ${who} may raise ${key} to at most ${limit}, not ${value}`
              : `operator ${who} may not raise ${key}`;
        }
        return null;
      }
    }
  }
}

/** The budget keys a raise may name (for messages). */
export const RAISE_KEYS = Object.values(BUDGET_RAISE_KEY);
