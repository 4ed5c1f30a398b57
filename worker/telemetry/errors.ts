/**
 * Errors of the worker's OpenTelemetry setup. Each names the variable that is wrong, so
 * a worker with a typo in its `OTEL_*` environment exits at start instead of silently
 * exporting nothing.
 */
import { AgentLoopGuardError } from '../../common/errors';

/** Base class of every telemetry error. */
export class TelemetryError extends AgentLoopGuardError {
  readonly code: string = 'telemetry_error';

  /**
   * @param message what is wrong and what to do about it
   * @param options standard `ErrorOptions` (`cause`)
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** An `OTEL_*` variable has a value this worker cannot use. */
export class TelemetryConfigError extends TelemetryError {
  override readonly code: string = 'telemetry_config_invalid';

  /**
   * @param variable the environment variable at fault
   * @param message what is wrong with it
   * @param options standard `ErrorOptions` (`cause`)
   */
  constructor(
    readonly variable: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`Invalid worker environment: ${variable}: ${message}`, options);
  }
}
