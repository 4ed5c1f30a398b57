/**
 * `defineTool`: how a team registers a tool the agent may call. Args are parsed with a
 * strict zod schema before anything runs; a write names the business operation it
 * performs (`operationKey`) so the ledger can refuse to perform it twice.
 */
import { checkArgDisplay, type ArgDisplayHints } from './arg-display';
import { z } from 'zod';
import type { ToolResult, WorkspaceReport } from '../guard';
import type { ReconcileAnswer } from '../storage/ledger';
import type { Tx } from './tx';

/** What a running tool may use. */
export interface ToolContext {
  readonly runId: string;
  /** The write's operation key (also the key to forward to an idempotent vendor). */
  readonly operationKey: string | null;
  /** Liveness signal for long tools (Temporal heartbeat + ledger lease renewal). */
  readonly heartbeat: () => void;
  /** Aborted when the activity is cancelled. */
  readonly signal: AbortSignal;
  /**
   * True when this write runs again under an operation key whose earlier execution was
   * dispatched and then lost (its executor died; the ledger let this one take over because the
   * tool is `vendorIdempotent`, or its `reconcile` answered `not_found`): forward
   * `operationKey` to the vendor so it answers the first execution. False on a first execution
   * and for reads (docs/ledger.md "How UNKNOWN is settled"). Always set by the runtime;
   * optional so a context built by hand (a unit test) need not name it.
   */
  readonly reExecution?: boolean;
  /**
   * Where the tool's business write goes. For a tool marked `atomicWithLedger` this is
   * the ledger's own commit transaction, so the write and the SUCCEEDED record commit
   * together or not at all; otherwise it is the world's own connection.
   */
  readonly tx: Tx;
  /**
   * True in an LLM run: an error the tool does not declare goes back to the model
   * as PRECONDITION `tool_error` (tools/tool-errors.ts). An MCP tool classifies `isError` so.
   */
  readonly errorsToModel?: boolean;
}

/** What a tool's `progressVersion` hook is given. */
export interface ProgressContext {
  readonly runId: string;
  /** The demo world's progress version for the run (what is reported without the hook). */
  readonly base: number;
}

/** What `execute` returns: a SUCCESS payload or an explicit non-success result. */
export type ToolReturn =
  | {
      readonly kind?: 'SUCCESS';
      readonly data?: unknown;
      readonly terminal?: boolean;
      /**
       * What the call did to the workspace (docs/spec.md §3 "Workspace reports"): a change is
       * progress even when `data` is what an earlier call returned; the same edit growing the
       * workspace again and again is refused (`reapplied_edit`). tools/shell.ts gives one.
       */
      readonly workspace?: WorkspaceReport;
    }
  | Exclude<ToolResult, { kind: 'SUCCESS' }>;

/** A tool definition. */
export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  /** Strict zod schema of the args; defaults here are filled in before fingerprinting. */
  readonly schema: S;
  /**
   * JSON Schema planners see, when the tool has its own (an MCP server's `inputSchema`);
   * else it is derived from `schema`.
   */
  readonly inputJsonSchema?: Record<string, unknown>;
  readonly effect: 'read' | 'write';
  /**
   * Business operation key of a write (e.g. `tenant:incident:notification-type`); null when
   * these args do not give one (the call is then PRECONDITION `missing_operation_key`).
   */
  readonly operationKey?: (args: z.output<S>) => string | null;
  /** Dot paths that never change the result (request ids, trace ids). */
  readonly nonSemantic?: readonly string[];
  /**
   * Top-level free-text args whose wording does not change the request (a search `query`):
   * two calls whose other args are equal and whose declared text has the same words count as
   * one call for the repeat rules, reason `near_call_repeat` (docs/spec.md §3, Near repeats).
   * Each must be a key of the args schema. Off unless declared (for writes too).
   */
  readonly similarArgs?: readonly string[];
  /** The tool forwards the operation key to its vendor, so re-running it is safe. */
  readonly vendorIdempotent?: boolean;
  /** The tool's store is the ledger's database: its write commits with the ledger record. */
  readonly atomicWithLedger?: boolean;
  /**
   * False for a tool that never touches the worker's world database (an MCP server, a
   * remote API): it runs outside a world transaction, so a slow network call holds no
   * database lock and tools run concurrently. Default true (`ctx.tx` is a transaction).
   */
  readonly usesWorldTransaction?: boolean;
  /**
   * Asks the outside world (the vendor) what became of an operation whose executor died
   * after dispatch; the ledger settles the record from the answer instead of going UNKNOWN.
   */
  readonly reconcile?: (key: string) => Promise<ReconcileAnswer>;
  /**
   * Re-checks, without side effects, what this call needs from the world; returns the
   * unmet condition or null when it is met. A stopped run's resume is accepted only when
   * the blocked call's check passes (else when external state moved at all).
   */
  readonly checkPrecondition?: (args: z.output<S>, tx: Tx) => Promise<string | null>;
  /**
   * A person must approve the call before it runs: `true` for every call, or a function of
   * the parsed args (e.g. transfers above an amount). The run stops NEEDS_HUMAN
   * `approval_required` showing the exact call; an approval bound to that run, stop and
   * call fingerprint is used once when the call runs (storage/approvals, docs/security.md
   * "Approvals"). MCP tools set it from their server config. The worker's
   * `AGENT_APPROVAL_POLICY` can require approvals for tools that do not set it.
   */
  readonly requiresApproval?: boolean | ((args: z.output<S>) => boolean);
  /** The tool may destroy or overwrite data (MCP `destructiveHint`); informational. */
  readonly destructive?: boolean;
  /**
   * How a person reads some args (tools/arg-display.ts): e.g. `{ amountCents: { unit: 'EUR',
   * scale: 100 } }` shows 12500 as `125.00 EUR` in the approvals console. Informational: the
   * guard, the ledger and the approval binding ignore it.
   */
  readonly display?: ArgDisplayHints;
  /**
   * The run's progress version after a call of this tool (e.g. an MCP server's own
   * version read by a probe); `base` is the demo world's version. Null: unknown, keep the
   * last one. Without it the world's version is reported.
   */
  readonly progressVersion?: (ctx: ProgressContext) => Promise<number | null>;
  /** Tool-specific error classification; return undefined to fall back to the defaults. */
  readonly classify?: (err: unknown) => ToolResult | undefined;
  /** Performs the call. Throw to fail; the error is classified. */
  readonly execute: (args: z.output<S>, ctx: ToolContext) => Promise<ToolReturn> | ToolReturn;
}

/** Any tool definition, erased. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = ToolDefinition<any>;

/** Tool names: lower snake case, as LLM tool-use APIs accept. */
const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** Validates and returns a tool definition. */
export function defineTool<S extends z.ZodType>(def: ToolDefinition<S>): ToolDefinition<S> {
  if (!TOOL_NAME.test(def.name))
    throw new TypeError(`defineTool: name "${def.name}" must match ${TOOL_NAME}`);
  if (def.effect !== 'read' && def.effect !== 'write') {
    throw new TypeError(`defineTool(${def.name}): effect must be "read" or "write"`);
  }
  if (def.effect === 'write' && !def.operationKey) {
    throw new TypeError(
      `defineTool(${def.name}): a write tool needs operationKey(args) naming the business operation`,
    );
  }
  if (!(def.schema instanceof z.ZodType))
    throw new TypeError(`defineTool(${def.name}): schema must be a zod schema`);
  if (def.display !== undefined) checkArgDisplay(def.name, def.display);
  if (def.similarArgs && def.similarArgs.length > 0) {
    // The zod object's keys, else (an MCP tool's compiled schema) its JSON Schema's properties.
    const props = def.inputJsonSchema?.properties;
    const shape =
      def.schema instanceof z.ZodObject
        ? (def.schema.shape as Record<string, unknown>)
        : props && typeof props === 'object'
          ? (props as Record<string, unknown>)
          : null;
    const missing = def.similarArgs.filter((a) => !shape || !Object.hasOwn(shape, a));
    if (missing.length > 0)
      throw new TypeError(
        `defineTool(${def.name}): similarArgs names ${missing.map((a) => `"${a}"`).join(', ')}, which the args schema ${shape ? 'does not have' : 'cannot show (neither a z.object nor JSON Schema properties)'}`,
      );
  }
  return def;
}

/** Normalises what `execute` returned into a ToolResult. */
export function toResult(ret: ToolReturn): ToolResult {
  if (ret.kind === undefined || ret.kind === 'SUCCESS') {
    const r = ret as { data?: unknown; terminal?: boolean; workspace?: WorkspaceReport };
    const ws = r.workspace === undefined ? {} : { workspace: r.workspace };
    return r.terminal
      ? { kind: 'SUCCESS', data: r.data, terminal: true, ...ws }
      : { kind: 'SUCCESS', data: r.data, ...ws };
  }
  return ret as Exclude<ToolResult, { kind: 'SUCCESS' }>;
}
