/**
 * The parts of the official MCP SDK (`@modelcontextprotocol/sdk`) the MCP tools use. The
 * SDK is an optional package (common/optional-dep.ts): it is loaded when a worker connects
 * to its first MCP server, so a worker without `mcpServers` never needs it. The files here
 * import its types only.
 */
import type * as ClientModule from '@modelcontextprotocol/sdk/client/index.js';
import type * as StdioModule from '@modelcontextprotocol/sdk/client/stdio.js';
import type * as StreamableHttpModule from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type * as TypesModule from '@modelcontextprotocol/sdk/types.js';
import { loadOptional } from '../../common/optional-dep';

/** What the MCP tools take from the SDK. */
export interface McpSdk {
  readonly Client: typeof ClientModule.Client;
  readonly StdioClientTransport: typeof StdioModule.StdioClientTransport;
  readonly DEFAULT_INHERITED_ENV_VARS: typeof StdioModule.DEFAULT_INHERITED_ENV_VARS;
  readonly StreamableHTTPClientTransport: typeof StreamableHttpModule.StreamableHTTPClientTransport;
  readonly StreamableHTTPError: typeof StreamableHttpModule.StreamableHTTPError;
  readonly CallToolResultSchema: typeof TypesModule.CallToolResultSchema;
  readonly ListToolsResultSchema: typeof TypesModule.ListToolsResultSchema;
  readonly ErrorCode: typeof TypesModule.ErrorCode;
  readonly McpError: typeof TypesModule.McpError;
}

const FOR_WHAT = 'the MCP client (mcpServers in agent.config.json)';

let loaded: McpSdk | null = null;

/**
 * The SDK, loaded on the first call.
 *
 * @throws {OptionalDependencyError} when `@modelcontextprotocol/sdk` is not installed
 */
export function mcpSdk(): McpSdk {
  if (loaded) return loaded;
  const client = loadOptional<typeof ClientModule>('@modelcontextprotocol/sdk/client/index.js', FOR_WHAT);
  const stdio = loadOptional<typeof StdioModule>('@modelcontextprotocol/sdk/client/stdio.js', FOR_WHAT);
  const http = loadOptional<typeof StreamableHttpModule>(
    '@modelcontextprotocol/sdk/client/streamableHttp.js',
    FOR_WHAT,
  );
  const types = loadOptional<typeof TypesModule>('@modelcontextprotocol/sdk/types.js', FOR_WHAT);
  loaded = {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    DEFAULT_INHERITED_ENV_VARS: stdio.DEFAULT_INHERITED_ENV_VARS,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    StreamableHTTPError: http.StreamableHTTPError,
    CallToolResultSchema: types.CallToolResultSchema,
    ListToolsResultSchema: types.ListToolsResultSchema,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
  };
  return loaded;
}
