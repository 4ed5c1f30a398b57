/**
 * `agent.config.json`: the MCP servers a worker hosts tools from, in the shape users
 * already write for other MCP clients (`{"mcpServers": {"NAME": {...}}}`), plus the
 * guard's per-tool overrides. Parsed strictly: an unknown or malformed field is an error
 * naming it, and the worker refuses to start (docs/mcp.md).
 *
 * `${VAR}` in `url`, `args`, `env` values and `headers` values is replaced by the worker's
 * environment variable VAR when the file is loaded, so secrets need not be written in it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { McpConfigError } from './errors';
import { templateProblem } from './operation-key';

/** The config file read when AGENT_CONFIG is not set (in the working directory). */
export const DEFAULT_CONFIG_FILE = 'agent.config.json';

const nonEmpty = z.string().min(1);

function checkTemplate(t: string, ctx: z.RefinementCtx): void {
  const problem = t.trim() === '' ? 'must not be empty' : templateProblem(t);
  if (problem) ctx.addIssue({ code: 'custom', message: `operation key template "${t}": ${problem}` });
}

/**
 * How a write's operation key is derived from its args: a template (`"refund:{orderId}"`,
 * `{a.b}` is a dot path into the args) or a hash of chosen arg paths (`"args"`: all of
 * them, non-semantic paths dropped) behind a template prefix (default: the tool's name).
 */
export const operationKeySchema = z.union([
  z.string().superRefine(checkTemplate),
  z
    .object({
      prefix: z.string().superRefine(checkTemplate).optional(),
      hashOf: z.union([z.literal('args'), z.array(nonEmpty).min(1)]),
    })
    .strict(),
]);
/** An operation key rule as written in the config. */
export type OperationKeyRule = z.output<typeof operationKeySchema>;

/** Per-tool overrides, keyed by the tool's name at the server. */
export const toolOverrideSchema = z
  .object({
    /** Overrides the effect derived from `readOnlyHint`. */
    effect: z.enum(['read', 'write']).optional(),
    operationKey: operationKeySchema.optional(),
    /** Dot paths the fingerprint ignores (request ids, trace ids). */
    nonSemantic: z.array(nonEmpty).optional(),
    /** Top-level free-text args whose wording the repeat rules ignore (docs/spec.md §3, Near repeats). */
    similarArgs: z.array(nonEmpty).optional(),
    /** A person must approve each call (the approval flow: the run stops NEEDS_HUMAN approval_required). */
    requiresApproval: z.boolean().optional(),
    /** Overrides the re-execution safety derived from `idempotentHint`. */
    vendorIdempotent: z.boolean().optional(),
    /** The kind an `isError: true` result is classified as (default FATAL). */
    onError: z.enum(['RETRYABLE', 'PRECONDITION', 'FATAL']).optional(),
    /** Accept args the server's schema does not declare (default: a top-level unknown key is invalid). */
    openArgs: z.boolean().optional(),
    /** Do not offer this tool to planners. */
    hidden: z.boolean().optional(),
  })
  .strict();
/** Per-tool overrides. */
export type ToolOverride = z.output<typeof toolOverrideSchema>;

/** The progress probe: a read tool of the same server and the dot path of the version in its result. */
export const progressProbeSchema = z
  .object({
    tool: nonEmpty,
    args: z.record(z.string(), z.unknown()).optional(),
    path: nonEmpty,
  })
  .strict();
/** A progress probe. */
export type ProgressProbe = z.output<typeof progressProbeSchema>;

const common = {
  tools: z.record(z.string(), toolOverrideSchema).optional(),
  progress: progressProbeSchema.optional(),
  /** Per-call timeout (default 60 000). */
  timeoutMs: z.number().int().positive().optional(),
  /** Connect (initialize + list) timeout (default 15 000). */
  connectTimeoutMs: z.number().int().positive().optional(),
  /** Wait before a call to an unavailable server is retried (default 1000). */
  retryAfterMs: z.number().int().nonnegative().optional(),
};

const stdioSchema = z
  .object({
    type: z.literal('stdio').optional(),
    command: nonEmpty,
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    /** Working directory of the server process, relative to the config file. */
    cwd: nonEmpty.optional(),
    ...common,
  })
  .strict();

const httpSchema = z
  .object({
    type: z.enum(['http', 'streamable-http', 'streamableHttp']).optional(),
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
    headers: z.record(z.string(), z.string()).optional(),
    ...common,
  })
  .strict();

/** A stdio server: the worker spawns it. */
export type StdioServerConfig = z.output<typeof stdioSchema>;
/** A Streamable HTTP server. */
export type HttpServerConfig = z.output<typeof httpSchema>;
/** One server entry. */
export type McpServerConfig = StdioServerConfig | HttpServerConfig;

/** True for a stdio entry. */
export function isStdio(s: McpServerConfig): s is StdioServerConfig {
  return 'command' in s;
}

const serverSchema = z.unknown().transform((value, ctx): McpServerConfig => {
  const v = value as Record<string, unknown> | null;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    ctx.addIssue({ code: 'custom', message: 'must be an object with "command" (stdio) or "url" (HTTP)' });
    return z.NEVER;
  }
  if (v.type === 'sse') {
    ctx.addIssue({
      code: 'custom',
      path: ['type'],
      message: 'the SSE transport is deprecated and not supported; use the server\'s Streamable HTTP "url"',
    });
    return z.NEVER;
  }
  const schema = 'command' in v ? stdioSchema : 'url' in v ? httpSchema : null;
  if (!schema) {
    ctx.addIssue({ code: 'custom', message: 'needs "command" (a stdio server) or "url" (Streamable HTTP)' });
    return z.NEVER;
  }
  const parsed = schema.safeParse(v);
  if (parsed.success) return parsed.data;
  for (const i of parsed.error.issues) ctx.addIssue({ code: 'custom', path: i.path, message: i.message });
  return z.NEVER;
});

/** Server names: they become part of tool names (`mcp__NAME__TOOL`). */
const SERVER_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,31}$/;

/** The whole file. */
export const agentConfigSchema = z
  .object({
    mcpServers: z.record(
      z.string().regex(SERVER_NAME, `server names must match ${SERVER_NAME}`),
      serverSchema,
    ),
  })
  .strict();
/** The parsed config. */
export type AgentConfig = z.output<typeof agentConfigSchema>;
/** The config as written. */
export type AgentConfigInput = z.input<typeof agentConfigSchema>;

/** A parsed config plus where it came from (relative `cwd`s resolve against its directory). */
export interface LoadedConfig {
  readonly config: AgentConfig;
  readonly file: string | null;
  /** Directory relative paths in the config resolve against. */
  readonly baseDir: string;
}

function issuesText(err: z.ZodError): string {
  return err.issues
    .map((i) => `${i.path.length ? i.path.map(String).join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

function expand(text: string, field: string, env: NodeJS.ProcessEnv, missing: string[]): string {
  return text.replace(VAR, (_m, name: string) => {
    const value = env[name];
    if (value === undefined) {
      missing.push(`${field}: environment variable ${name} is not set`);
      return '';
    }
    return value;
  });
}

function expandRecord(
  rec: Record<string, string> | undefined,
  field: string,
  env: NodeJS.ProcessEnv,
  missing: string[],
): Record<string, string> | undefined {
  if (!rec) return rec;
  return Object.fromEntries(
    Object.entries(rec).map(([k, v]) => [k, expand(v, `${field}.${k}`, env, missing)]),
  );
}

/**
 * Parses a config value (already JSON-decoded). Throws McpConfigError naming every bad
 * field (`mcpServers.notes.command: …`) and every `${VAR}` that is not set.
 */
export function parseAgentConfig(
  value: unknown,
  options: { file?: string | null; env?: NodeJS.ProcessEnv } = {},
): AgentConfig {
  const file = options.file ?? null;
  const where = file ? `${file}: ` : 'agent config: ';
  const parsed = agentConfigSchema.safeParse(value);
  if (!parsed.success) throw new McpConfigError(`${where}${issuesText(parsed.error)}`, file);
  const env = options.env ?? process.env;
  const missing: string[] = [];
  const servers: Record<string, McpServerConfig> = {};
  for (const [name, s] of Object.entries(parsed.data.mcpServers)) {
    const at = `mcpServers.${name}`;
    servers[name] = isStdio(s)
      ? {
          ...s,
          args: s.args?.map((a, i) => expand(a, `${at}.args.${i}`, env, missing)),
          env: expandRecord(s.env, `${at}.env`, env, missing),
        }
      : {
          ...s,
          url: expand(s.url, `${at}.url`, env, missing),
          headers: expandRecord(s.headers, `${at}.headers`, env, missing),
        };
  }
  if (missing.length > 0) throw new McpConfigError(`${where}${missing.join('; ')}`, file);
  return { mcpServers: servers };
}

/** Reads and parses a config file. */
export function readAgentConfig(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const abs = resolve(file);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (err) {
    throw new McpConfigError(`${abs}: cannot read the agent config (${(err as Error).message})`, abs, {
      cause: err,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new McpConfigError(`${abs}: not valid JSON (${(err as Error).message})`, abs, { cause: err });
  }
  return { config: parseAgentConfig(json, { file: abs, env }), file: abs, baseDir: dirname(abs) };
}

/**
 * The config file a worker reads: AGENT_CONFIG when set (it must exist), else
 * `./agent.config.json` when it exists, else none (no MCP tools).
 */
export function configFileFromEnv(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string | null {
  const explicit = env.AGENT_CONFIG?.trim();
  if (explicit) return resolve(cwd, explicit);
  const fallback = resolve(cwd, DEFAULT_CONFIG_FILE);
  return existsSync(fallback) ? fallback : null;
}
