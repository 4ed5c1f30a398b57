/**
 * The worker's tenant spend limits: `AGENT_SPEND_LIMITS`, JSON
 * `{"TENANT": {"maxUsd": N, "windowMs": M}}` (docs/spec.md §7.10). Parsed once when the
 * worker starts; anything malformed stops the worker with an error naming the variable and
 * the field, because a cap that silently does not apply is worse than no worker.
 */
import { z } from 'zod';
import { tenantSchema } from '../../common/contracts';
import { SpendLimitsInvalidError } from './errors';

/** Name of the worker env var holding the tenant spend limits. */
export const SPEND_LIMITS_ENV = 'AGENT_SPEND_LIMITS';

/** A tenant's cap: at most `maxUsd` of model spend in any window of `windowMs`. */
export interface SpendLimit {
  readonly maxUsd: number;
  readonly windowMs: number;
}

/** Tenant → cap. */
export type SpendLimits = Readonly<Record<string, SpendLimit>>;

/** The window of a tenant capped only by an operator's raise (no entry in the env): one day. */
export const DEFAULT_SPEND_WINDOW_MS = 24 * 3_600_000;

const limitSchema = z
  .object({
    maxUsd: z.number({ error: 'must be a number (USD)' }).finite().nonnegative('must be ≥ 0'),
    windowMs: z
      .number({ error: 'must be a number (milliseconds)' })
      .int('must be an integer')
      .positive('must be > 0'),
  })
  .strict();
const limitsSchema = z.record(tenantSchema, limitSchema);

/** Checks limits given in code or parsed from JSON; `where` names their source in errors. */
export function checkSpendLimits(raw: unknown, where: string = SPEND_LIMITS_ENV): SpendLimits {
  const parsed = limitsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue && issue.path.length > 0 ? `${where}.${issue.path.join('.')}` : where;
    throw new SpendLimitsInvalidError(
      `${field}: ${issue?.message ?? 'invalid'} (expected {"TENANT": {"maxUsd": N, "windowMs": M}})`,
    );
  }
  return parsed.data;
}

/** The limits of `AGENT_SPEND_LIMITS` in `env`; null when it is unset or blank (no tenant is capped). */
export function spendLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): SpendLimits | null {
  const text = env[SPEND_LIMITS_ENV];
  if (text === undefined || text.trim() === '') return null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new SpendLimitsInvalidError(`${SPEND_LIMITS_ENV} is not valid JSON: ${(err as Error).message}`);
  }
  return checkSpendLimits(raw);
}
