/** Validation of operator resolutions: who and why are mandatory, so the audit trail is never empty. */
import { z } from 'zod';
import type { ResolveInput } from './types';

const ResolveInputSchema = z.object({
  as: z.enum(['succeeded', 'failed']),
  actor: z.string().trim().min(1, 'actor is required (who settles this record)'),
  reason: z.string().trim().min(1, 'reason is required (why: the evidence looked at)'),
  result: z.unknown().optional(),
});

/** Validates and trims a {@link ResolveInput}; throws a `TypeError` naming the bad field. */
export function parseResolveInput(input: ResolveInput): ResolveInput {
  const parsed = ResolveInputSchema.safeParse(input);
  if (!parsed.success) {
    throw new TypeError(
      `invalid resolution: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')}`,
    );
  }
  return parsed.data as ResolveInput;
}
