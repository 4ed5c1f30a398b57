/**
 * One MCP server tool as a `defineTool` tool, named `mcp__SERVER__TOOL`, so it runs under
 * the same loop guard and idempotency ledger as a built-in tool:
 *
 * - args are checked against the server's JSON Schema before any call (args-schema.ts);
 * - the effect comes from the annotations: `readOnlyHint: true` → read, otherwise write
 *   (the MCP default), overridable per tool;
 * - `idempotentHint: true` → `vendorIdempotent`: the server states that repeating a call
 *   with the same args has no further effect, which is exactly what makes re-running a
 *   write safe after a crash left its ledger record DISPATCHED (the ledger re-runs it
 *   instead of going UNKNOWN); overridable with `vendorIdempotent: false`;
 * - `destructiveHint` (MCP default true for writes) is kept as `destructive` and shown in
 *   the description planners read;
 * - results and errors are classified by classify.ts.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ResultCode } from '../../guard';
import { defineTool, type AnyTool, type ToolReturn } from '../define-tool';
import { modelErrorText, undeclaredToModel } from '../tool-errors';
import { compileArgsSchema } from './args-schema';
import { classifyMcpError, classifyMcpResult, resultData } from './classify';
import type { McpConnection } from './client-pool';
import type { ProgressProbe, ToolOverride } from './config';
import { McpUnavailableError } from './errors';
import { compileOperationKey, valueAt } from './operation-key';

/** How often a running call heartbeats (well inside the default 20 s heartbeat timeout). */
const HEARTBEAT_EVERY_MS = 5_000;

/** A server or tool name as a tool-name segment: lower case, `[a-z0-9_]`. */
export function nameSegment(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

/** The name planners see for tool `tool` of server `server`. */
export function mcpToolName(server: string, tool: string): string {
  return `mcp__${nameSegment(server)}__${nameSegment(tool)}`;
}

/** Reads the progress version a probe result gives (null when the path holds no number). */
export function probeValue(data: unknown, path: string): number | null {
  let source = data;
  if (typeof source === 'string') {
    try {
      source = JSON.parse(source) as unknown;
    } catch {
      return null;
    }
  }
  const v = valueAt(source, path);
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}

/** What {@link createMcpTool} needs. */
export interface McpToolSpec {
  readonly connection: McpConnection;
  readonly listed: Tool;
  readonly override?: ToolOverride;
  readonly probe?: ProgressProbe;
  readonly warn?: (msg: string) => void;
}

function describe(listed: Tool, effect: 'read' | 'write', destructive: boolean, approval: boolean): string {
  const notes = [
    effect === 'read' ? 'read-only' : 'write (runs at most once per operation key)',
    ...(destructive ? ['destructive'] : []),
    ...(listed.annotations?.idempotentHint ? ['idempotent'] : []),
    ...(approval ? ["requires a person's approval of each call"] : []),
  ];
  const text = listed.description?.trim() || listed.annotations?.title || listed.title || listed.name;
  return `${text} [${notes.join('; ')}]`;
}

/** Builds the guarded tool for one listed MCP tool. */
export function createMcpTool(spec: McpToolSpec): AnyTool {
  const { connection, listed } = spec;
  const o = spec.override ?? {};
  const name = mcpToolName(connection.name, listed.name);
  const ann = listed.annotations ?? {};
  const effect = o.effect ?? (ann.readOnlyHint === true ? 'read' : 'write');
  const destructive = effect === 'write' && ann.destructiveHint !== false;
  const requiresApproval = o.requiresApproval === true;
  const args = compileArgsSchema(name, listed.inputSchema as Record<string, unknown>, {
    openArgs: o.openArgs,
    warn: spec.warn,
  });
  const nonSemantic = o.nonSemantic ?? [];
  const operationKey = compileOperationKey(o.operationKey, name, nonSemantic);
  const retryAfterMs = connection.retryAfterMs;
  const probe = spec.probe;

  async function execute(
    input: unknown,
    ctx: { heartbeat: () => void; signal: AbortSignal; errorsToModel?: boolean },
  ) {
    // An LLM run: an `isError` the server config does not classify, and an error
    // without a class, go back to the model (tools/tool-errors.ts).
    const toModel = ctx.errorsToModel === true;
    const beat = setInterval(ctx.heartbeat, HEARTBEAT_EVERY_MS);
    try {
      const result = await connection.callTool(listed.name, input, {
        signal: ctx.signal,
        onProgress: ctx.heartbeat,
      });
      const r = classifyMcpResult(result, {
        onError: o.onError ?? (toModel ? 'PRECONDITION' : undefined),
        retryAfterMs,
      });
      return (
        toModel && o.onError === undefined && r.kind === 'PRECONDITION' && r.code === ResultCode.TOOL_ERROR
          ? { ...r, unmet: modelErrorText(r.unmet ?? '') }
          : r
      ) as ToolReturn;
    } catch (err) {
      // Sent and then lost (a timeout, a connection dropped mid-call): the outcome is
      // unknown, so it is thrown and the ledger treats a write accordingly. Anything the
      // server answered, or that never reached it, is this call's result.
      if (err instanceof McpUnavailableError && err.sent) throw err;
      const r = classifyMcpError(err, { retryAfterMs });
      if (r.kind === 'SUCCESS') throw err;
      return toModel ? undeclaredToModel(r, err) : r;
    } finally {
      clearInterval(beat);
    }
  }

  return defineTool({
    name,
    description: describe(listed, effect, destructive, requiresApproval),
    schema: args.schema,
    inputJsonSchema: args.jsonSchema,
    effect,
    // A write without a rule has no key: PRECONDITION missing_operation_key unless the
    // planner names one (never a random id: that would defeat the ledger).
    ...(effect === 'write' ? { operationKey: operationKey ?? (() => null) } : {}),
    nonSemantic,
    ...(o.similarArgs ? { similarArgs: o.similarArgs } : {}),
    vendorIdempotent: o.vendorIdempotent ?? ann.idempotentHint === true,
    // A network call to the server: no world transaction (no lock held, calls run concurrently).
    usesWorldTransaction: false,
    requiresApproval,
    destructive,
    classify: (err) => classifyMcpError(err, { retryAfterMs }),
    execute: (input, ctx) => execute(input, ctx),
    ...(probe
      ? {
          async progressVersion({ base }: { base: number }) {
            try {
              const r = await connection.callTool(probe.tool, probe.args ?? {});
              if (r.isError) return null;
              const v = probeValue(resultData(r), probe.path);
              return v === null ? null : base + v;
            } catch {
              return null; // unknown: the run keeps its last version
            }
          },
        }
      : {}),
  });
}
