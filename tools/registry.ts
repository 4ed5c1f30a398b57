/**
 * The registry of tools a worker hosts, and the normalisation of a proposed call: strict
 * zod parse, operation key, canonical args and fingerprint — done in an activity so the
 * workflow only ever sees validated, fingerprinted calls.
 */
import { z } from 'zod';
import type { ToolDescriptor } from '../common/planner';
import { normalizeCall, ResultCode, type ToolResult } from '../guard';
import { sha256ArgsHash } from '../storage/ledger/args-hash';
import { argsOutOfBounds } from './args-limits';
import { classifyError } from './classify';
import type { AnyTool } from './define-tool';

/** A proposed call after normalisation. */
export interface NormalizedProposal {
  readonly tool: string;
  /** Parsed args (defaults filled) when valid, else the raw args. */
  readonly args: unknown;
  readonly canonicalArgs: unknown;
  readonly fingerprint: string;
  /** The near-repeat key when the tool declares `similarArgs` (guard/near.ts); absent otherwise. */
  readonly similarKey?: string;
  /** `sha256:<hex>` of the same canonical form: what the ledger compares (docs/spec.md §8). */
  readonly argsHash: string;
  readonly operationKey: string | null;
  readonly effect: 'read' | 'write';
  /** Set when the call cannot run as proposed: PRECONDITION unknown_tool / invalid_args. */
  readonly rejection: ToolResult | null;
}

/**
 * A tool schema's JSON Schema, computed once per schema: planners are handed the tools every
 * turn, and converting a zod schema costs about a millisecond (per-step time).
 * Shared, so never modified by its readers.
 */
const jsonSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();
function inputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  let json = jsonSchemas.get(schema);
  if (!json) {
    json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    jsonSchemas.set(schema, json);
  }
  return json;
}

/** The start of the `unmet` text of an `unknown_tool` refusal (resume verification reads it). */
export function unknownToolUnmet(toolName: string): string {
  return `no tool named "${toolName}"`;
}

/** The tool an `unknown_tool` refusal's `unmet` text names, or null for any other text. */
export function unknownToolOf(unmet: string | null | undefined): string | null {
  return /^no tool named "([^"]+)"/.exec(unmet ?? '')?.[1] ?? null;
}

/** The tools one worker hosts. */
export class ToolRegistry {
  private readonly tools = new Map<string, AnyTool>();
  /**
   * The worker's finishing tool (tools/finish.ts), if it has one: a run whose `tools` list
   * leaves it out is still offered it, so every run can finish.
   */
  readonly finishing: string | null;

  constructor(tools: readonly AnyTool[] = [], o: { finishing?: string | null } = {}) {
    for (const t of tools) this.register(t);
    this.finishing = o.finishing && this.tools.has(o.finishing) ? o.finishing : null;
  }

  /** Adds a tool; a second tool with the same name is an error. */
  register(tool: AnyTool): this {
    if (this.tools.has(tool.name)) throw new TypeError(`ToolRegistry: tool "${tool.name}" registered twice`);
    this.tools.set(tool.name, tool);
    return this;
  }

  /** The tool of that name, if registered. */
  get(name: string): AnyTool | undefined {
    return this.tools.get(name);
  }

  /** Registered tool names. */
  names(): string[] {
    return [...this.tools.keys()];
  }

  /** What planners (and LLMs) see of the tools (their JSON schemas are made once per schema). */
  descriptors(): ToolDescriptor[] {
    return [...this.tools.values()].map((t) => ({
      name: t.name,
      description: t.description,
      effect: t.effect,
      inputSchema: t.inputJsonSchema ?? inputJsonSchema(t.schema),
    }));
  }

  /**
   * The fingerprint and args hash of a call whose args the tool's schema has already parsed
   * (the tool activity's own strict parse): {@link normalize}'s, without parsing them again.
   */
  hashes(toolName: string, parsedArgs: unknown): { fingerprint: string; argsHash: string } {
    const { fingerprint, argsHash } = this.canonical(toolName, parsedArgs, false);
    return { fingerprint, argsHash };
  }

  /** A call's canonical args, fingerprint (and similar-call key) and SHA-256 args hash. */
  private canonical(toolName: string, value: unknown, similar: boolean) {
    const tool = this.tools.get(toolName);
    const n = normalizeCall(toolName, value, {
      nonSemantic: tool?.nonSemantic,
      similarArgs: similar ? tool?.similarArgs : undefined,
    });
    return { ...n, argsHash: sha256ArgsHash(toolName, n.canonicalArgs) };
  }

  /**
   * Validates and fingerprints a proposed call. Nothing runs here; an unknown tool or
   * invalid args come back as a `rejection` the workflow records as the call's result.
   */
  normalize(toolName: string, args: unknown, explicitKey?: string | null): NormalizedProposal {
    const tool = this.tools.get(toolName);
    const proposal = (
      value: unknown,
      operationKey: string | null,
      rejection: ToolResult | null,
    ): NormalizedProposal => {
      const n = this.canonical(toolName, value, rejection === null);
      return {
        tool: toolName,
        args: value,
        canonicalArgs: n.canonicalArgs,
        fingerprint: n.fingerprint,
        ...(n.similarKey ? { similarKey: n.similarKey } : {}),
        argsHash: n.argsHash,
        operationKey,
        effect: tool?.effect ?? 'read',
        rejection,
      };
    };
    const outOfBounds = argsOutOfBounds(args);
    if (outOfBounds !== null) {
      // Refused before zod, the canonical form or any hash recurses into them: the call is
      // fingerprinted by this small placeholder instead, so a repeat is still a repeat.
      return proposal({ args_refused: outOfBounds }, explicitKey ?? null, {
        kind: 'PRECONDITION',
        code: ResultCode.INVALID_ARGS,
        unmet: `${outOfBounds}; propose the call with smaller args`,
      });
    }
    if (!tool) {
      return proposal(args, explicitKey ?? null, {
        kind: 'PRECONDITION',
        code: ResultCode.UNKNOWN_TOOL,
        unmet: `${unknownToolUnmet(toolName)} (known: ${this.names().join(', ')})`,
      });
    }
    const parsed = tool.schema.safeParse(args ?? {});
    if (!parsed.success) return proposal(args, explicitKey ?? null, classifyError(parsed.error));
    const operationKey = explicitKey ?? tool.operationKey?.(parsed.data) ?? null;
    return proposal(parsed.data, operationKey, null);
  }
}
