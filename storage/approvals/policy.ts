/**
 * Which calls need a person's approval before they run: the tool's own `requiresApproval`
 * (a flag, or a function of the parsed args), or the worker's approval policy
 * (`AGENT_APPROVAL_POLICY`), which can require it for named tools and for every call at or
 * above a risk level without touching the tools' code.
 *
 * Risk levels, lowest first: `read` (the tool reads), `write` (it writes), `destructive`
 * (a write marked `destructive`, e.g. an MCP tool with `destructiveHint`).
 */
import type { AnyTool } from '../../tools/define-tool';
import { ApprovalInputError } from './errors';

/** Risk levels, lowest first. */
export const RISK_LEVELS = ['read', 'write', 'destructive'] as const;
/** One of {@link RISK_LEVELS}. */
export type RiskLevel = (typeof RISK_LEVELS)[number];

/** The worker's approval policy. */
export interface ApprovalPolicy {
  /** Every call at or above this risk needs an approval (none when absent). */
  readonly minRisk?: RiskLevel;
  /** Tools whose every call needs an approval. */
  readonly tools?: readonly string[];
}

/** The policy that adds nothing to the tools' own `requiresApproval`. */
export const NO_APPROVAL_POLICY: ApprovalPolicy = Object.freeze({});

/** The risk of a call of `tool`. */
export function riskOf(tool: Pick<AnyTool, 'effect' | 'destructive'>): RiskLevel {
  if (tool.effect === 'read') return 'read';
  return tool.destructive ? 'destructive' : 'write';
}

/**
 * Parses `AGENT_APPROVAL_POLICY`: unset or empty is no policy; a JSON object
 * `{"minRisk": "write"|"destructive", "tools": ["name", …]}`; or a plain comma-separated list
 * of tool names. Throws {@link ApprovalInputError} naming what is wrong.
 */
export function parseApprovalPolicy(value: string | undefined): ApprovalPolicy {
  const textValue = value?.trim() ?? '';
  if (textValue === '') return NO_APPROVAL_POLICY;
  if (!textValue.startsWith('{')) {
    const tools = textValue.split(',').map((t) => t.trim());
    if (tools.some((t) => !/^[a-z][a-z0-9_]{0,63}$/.test(t))) {
      throw new ApprovalInputError(
        `AGENT_APPROVAL_POLICY: "${textValue}" is neither JSON nor a comma-separated list of tool names`,
      );
    }
    return { tools };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(textValue);
  } catch (err) {
    throw new ApprovalInputError(`AGENT_APPROVAL_POLICY is not valid JSON: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const o = raw as Record<string, unknown>;
  const unknownKeys = Object.keys(o).filter((k) => k !== 'minRisk' && k !== 'tools');
  if (unknownKeys.length > 0) {
    throw new ApprovalInputError(
      `AGENT_APPROVAL_POLICY: unknown key(s) ${unknownKeys.join(', ')} (known: minRisk, tools)`,
    );
  }
  if (o.minRisk !== undefined && !(RISK_LEVELS as readonly unknown[]).includes(o.minRisk)) {
    throw new ApprovalInputError(`AGENT_APPROVAL_POLICY: minRisk must be one of ${RISK_LEVELS.join(', ')}`);
  }
  if (
    o.tools !== undefined &&
    (!Array.isArray(o.tools) || o.tools.some((t) => typeof t !== 'string' || t === ''))
  ) {
    throw new ApprovalInputError('AGENT_APPROVAL_POLICY: tools must be an array of tool names');
  }
  return {
    ...(o.minRisk !== undefined ? { minRisk: o.minRisk as RiskLevel } : {}),
    ...(o.tools !== undefined ? { tools: [...(o.tools as string[])] } : {}),
  };
}

/**
 * True when this call of `tool` (with its parsed `args`) needs an approval: the tool says so,
 * or the policy names the tool, or the call's risk is at or above the policy's `minRisk`.
 */
export function approvalRequired(
  tool: AnyTool,
  args: unknown,
  policy: ApprovalPolicy = NO_APPROVAL_POLICY,
): boolean {
  const own = tool.requiresApproval;
  if (typeof own === 'function' ? own(args) : own === true) return true;
  if (policy.tools?.includes(tool.name)) return true;
  if (policy.minRisk !== undefined) {
    return RISK_LEVELS.indexOf(riskOf(tool)) >= RISK_LEVELS.indexOf(policy.minRisk);
  }
  return false;
}
