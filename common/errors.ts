/**
 * The one error root of the package: every error it throws extends {@link AgentLoopGuardError}
 * and carries a stable, machine-readable `code` (snake_case), so callers match on `code`, not
 * on `instanceof` across realms or on message text. Sandbox-safe (no imports): workflow, guard
 * and Node code all use it.
 */

/** The base class of every error this package throws. */
export abstract class AgentLoopGuardError extends Error {
  /** Stable machine-readable code, e.g. `progress_source_failed`. */
  abstract readonly code: string;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** True for any error of this package. */
export function isAgentLoopGuardError(err: unknown): err is AgentLoopGuardError {
  return err instanceof AgentLoopGuardError;
}
