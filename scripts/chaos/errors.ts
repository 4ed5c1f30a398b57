/** Errors of the chaos harness. */

/** Base class of the chaos harness's errors. */
export class ChaosError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ChaosError';
  }
}

/** A part of the chaos stack (PostgreSQL, the dev server, a worker) could not be set up. */
export class ChaosSetupError extends ChaosError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ChaosSetupError';
  }
}
