/**
 * MCP tools under the guard: reads `agent.config.json`, connects to every server, lists
 * its tools and turns each into a guarded tool (`mcp__SERVER__TOOL`). docs/mcp.md has
 * the config format, the effect and result mapping, reconnects and the security notes.
 *
 * A server that cannot be reached or listed at start is an error naming it: the worker
 * does not start with a tool set other than the configured one (a process manager
 * restarts it; a server that goes down later only makes its calls RETRYABLE).
 */
import type { AnyTool } from '../define-tool';
import { McpClientPool } from './client-pool';
import {
  configFileFromEnv,
  parseAgentConfig,
  readAgentConfig,
  type AgentConfigInput,
  type LoadedConfig,
} from './config';
import { McpConfigError, McpToolsError } from './errors';
import { createMcpTool, mcpToolName } from './mcp-tool';
import { mcpSdk } from './sdk';

export { McpClientPool, McpConnection, MCP_DEFAULTS, stdioEnv } from './client-pool';
export { classifyMcpError, classifyMcpResult, McpResultCode, MAX_RESULT_CHARS } from './classify';
export {
  agentConfigSchema,
  configFileFromEnv,
  DEFAULT_CONFIG_FILE,
  parseAgentConfig,
  readAgentConfig,
  type AgentConfig,
  type AgentConfigInput,
  type McpServerConfig,
  type ToolOverride,
} from './config';
export { McpConfigError, McpToolsError, McpUnavailableError } from './errors';
export { mcpToolName } from './mcp-tool';

/** Where the MCP config comes from. */
export interface McpToolsOptions {
  /** A config value (tests, embedding); relative stdio `cwd`s resolve against `cwd`. */
  readonly config?: AgentConfigInput;
  /**
   * A config file; `null` reads none. Default: AGENT_CONFIG, else ./agent.config.json when
   * it exists, else none.
   */
  readonly configPath?: string | null;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Where warnings go (default console.warn). */
  readonly warn?: (msg: string) => void;
}

/** The MCP tools of one worker and their connections. */
export interface McpTools {
  readonly tools: AnyTool[];
  readonly pool: McpClientPool;
  /** The config file read, if any. */
  readonly file: string | null;
  close(): Promise<void>;
}

function load(o: McpToolsOptions): LoadedConfig | null {
  const env = o.env ?? process.env;
  const cwd = o.cwd ?? process.cwd();
  if (o.config !== undefined)
    return { config: parseAgentConfig(o.config, { env }), file: null, baseDir: cwd };
  const file = o.configPath === undefined ? configFileFromEnv(env, cwd) : o.configPath;
  return file === null ? null : readAgentConfig(file, env);
}

/**
 * Loads the config, connects to every server and lists its tools. Throws McpConfigError
 * for a malformed config (naming the field) or an override that names no listed tool,
 * McpToolsError for a server that cannot be reached or listed, and OptionalDependencyError
 * when there are servers but `@modelcontextprotocol/sdk` is not installed.
 */
export async function openMcpTools(o: McpToolsOptions = {}): Promise<McpTools> {
  const loaded = load(o);
  const empty: McpTools = {
    tools: [],
    pool: new McpClientPool({ config: { mcpServers: {} }, file: null, baseDir: '.' }),
    file: null,
    close: async () => undefined,
  };
  if (!loaded) return empty;
  // The SDK is an optional package: servers to connect to need it (an error naming it, not "unavailable").
  if (Object.keys(loaded.config.mcpServers).length > 0) mcpSdk();
  const warn = o.warn ?? ((m: string) => console.warn(m));
  const where = loaded.file ?? 'agent config';
  const pool = new McpClientPool(loaded);
  try {
    const perServer = await Promise.all(
      pool.all().map(async (connection) => {
        const at = `${where}: mcpServers.${connection.name}`;
        let listed;
        try {
          listed = await connection.listTools();
        } catch (err) {
          throw new McpToolsError(
            `${at}: the server is unavailable at worker start (${(err as Error).message})`,
            {
              cause: err,
            },
          );
        }
        const byName = new Map(listed.map((t) => [t.name, t]));
        const server = connection.server;
        for (const key of Object.keys(server.tools ?? {})) {
          if (!byName.has(key))
            throw new McpConfigError(
              `${at}.tools.${key}: the server lists no tool "${key}" (it lists: ${[...byName.keys()].join(', ')})`,
              loaded.file,
            );
        }
        const probe = server.progress;
        if (probe) {
          const t = byName.get(probe.tool);
          if (!t)
            throw new McpConfigError(
              `${at}.progress.tool: the server lists no tool "${probe.tool}"`,
              loaded.file,
            );
          const effect =
            server.tools?.[probe.tool]?.effect ?? (t.annotations?.readOnlyHint ? 'read' : 'write');
          if (effect !== 'read')
            throw new McpConfigError(
              `${at}.progress.tool: "${probe.tool}" must be a read tool (readOnlyHint: true or "effect": "read")`,
              loaded.file,
            );
        }
        const tools: AnyTool[] = [];
        for (const t of listed) {
          const override = server.tools?.[t.name];
          if (override?.hidden) continue;
          const name = mcpToolName(connection.name, t.name);
          if (name.length > 64)
            throw new McpConfigError(
              `${at}: tool name ${name} is longer than 64 characters (shorten the server's name, or hide the tool with "tools": {"${t.name}": {"hidden": true}})`,
              loaded.file,
            );
          const tool = createMcpTool({ connection, listed: t, override, probe, warn });
          if (tool.effect === 'write' && !override?.operationKey)
            warn(
              `${at}: write tool ${tool.name} has no "operationKey" rule; its calls answer PRECONDITION missing_operation_key (docs/mcp.md)`,
            );
          tools.push(tool);
        }
        return tools;
      }),
    );
    const tools = perServer.flat();
    const seen = new Set<string>();
    for (const t of tools) {
      if (seen.has(t.name))
        throw new McpConfigError(`${where}: two MCP tools map to the same name ${t.name}`, loaded.file);
      seen.add(t.name);
    }
    return { tools, pool, file: loaded.file, close: () => pool.close() };
  } catch (err) {
    await pool.close();
    throw err;
  }
}
