/**
 * Errors of the MCP tool source: a bad `agent.config.json`, a server that cannot be
 * reached or listed, a server whose tools do not fit the config.
 */
import { AgentLoopGuardError } from '../../common/errors';

/** Base class of the MCP module's errors. */
export class McpToolsError extends AgentLoopGuardError {
  readonly code: string = 'mcp_error';
}

/** `agent.config.json` is unreadable or malformed; the message names the file and the field. */
export class McpConfigError extends McpToolsError {
  override readonly code: string = 'mcp_config_invalid';

  constructor(
    message: string,
    /** The config file, when the config came from one. */
    readonly file: string | null,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * A server could not be reached, or the connection failed under a call. `sent` says
 * whether the request may have reached the server: false only when it certainly did not
 * (connect failed, connection refused, session unknown to the server), so a write may be
 * released instead of being left with an unknown outcome.
 */
export class McpUnavailableError extends McpToolsError {
  override readonly code: string = 'mcp_unavailable';

  constructor(
    message: string,
    readonly server: string,
    readonly sent: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
