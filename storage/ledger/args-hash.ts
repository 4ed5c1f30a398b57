/**
 * The ledger's args hash: SHA-256 of a call's canonical text (docs/spec.md §8). The guard's
 * fingerprint (`tool:hex16`, guard/fingerprint.ts) is a 64-bit hash — fine for spotting a
 * repeated call inside one run, too short to be the only thing that tells two operations
 * with the same key apart in a ledger that lives for weeks. Activities only: node:crypto
 * does not exist in the workflow sandbox.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, type Json } from '../../guard/canonical';

/** Every SHA-256 args hash starts with this; a hash without it was written before the upgrade (a fingerprint). */
export const SHA256_ARGS_HASH_PREFIX = 'sha256:';

/**
 * `sha256:<64 hex>` of the canonical text of `[tool, canonicalArgs]`: the same canonical
 * form the fingerprint hashes (keys sorted, strings trimmed, defaults filled, non-semantic
 * paths removed), with the tool name inside the hashed text so another tool never matches.
 */
export function sha256ArgsHash(tool: string, canonicalArgs: Json): string {
  const text = canonicalJson([tool, canonicalArgs]);
  return SHA256_ARGS_HASH_PREFIX + createHash('sha256').update(text, 'utf8').digest('hex');
}

/** True for a hash written by {@link sha256ArgsHash}; false for a pre-upgrade fingerprint-shaped one. */
export function isSha256ArgsHash(hash: string): boolean {
  return hash.startsWith(SHA256_ARGS_HASH_PREFIX);
}

/**
 * Whether a stored args hash names the same operation as a call with `argsHash` (SHA-256)
 * and `fingerprint`. A pre-upgrade row stored the fingerprint: it matches a call whose
 * fingerprint it equals. A SHA-256 row matches only the same SHA-256, so two arg sets whose
 * 64-bit fingerprints collide are still told apart.
 */
export function sameArgsHash(stored: string, argsHash: string, fingerprint?: string): boolean {
  if (stored === argsHash) return true;
  return fingerprint !== undefined && !isSha256ArgsHash(stored) && stored === fingerprint;
}
