/** Approval TTLs as operators write them. */
import { ApprovalInputError } from './errors';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `900000`, `90s`, `15m`, `1h`, `1d` (also `500ms`) → milliseconds; throws {@link ApprovalInputError} otherwise. */
export function parseTtl(value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(value);
  const ms = m ? Number(m[1]) * (UNIT_MS[m[2] ?? 'ms'] ?? 1) : Number.NaN;
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new ApprovalInputError(`"${value}" is not a duration (e.g. 900000, 90s, 15m, 1h, 1d)`);
  }
  return Math.ceil(ms);
}
