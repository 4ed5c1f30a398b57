/**
 * Operation keys of MCP write tools, from the config's rule (config.ts
 * `operationKeySchema`): a template over the args, or a hash of chosen args behind a
 * template prefix. A key is derived from the call's business content only, never from a
 * random id, so a re-proposed operation gets the same key and the ledger refuses it.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, normalizeCall } from '../../guard';
import type { OperationKeyRule } from './config';

/** A compiled rule: the key of a call, or null when the args do not give one. */
export type OperationKeyFn = (args: unknown) => string | null;

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** The value at a dot path (`a.b.0`), or undefined. */
export function valueAt(value: unknown, path: string): unknown {
  let cur: unknown = value;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, part)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/** A scalar as key text; null for anything else (absent, object, blank string). */
function keyPart(v: unknown): string | null {
  if (typeof v === 'string') return v.trim() === '' ? null : v.trim();
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'boolean') return String(v);
  return null;
}

/** Checks a template; returns the problem or null. */
export function templateProblem(template: string): string | null {
  const stripped = template.replace(PLACEHOLDER, (_m, path: string) => (path.trim() ? '' : '\u0000'));
  if (stripped.includes('\u0000')) return 'a placeholder "{}" needs an arg path, e.g. {orderId}';
  if (/[{}]/.test(stripped)) return 'unbalanced "{" or "}"';
  return null;
}

function compileTemplate(template: string): OperationKeyFn {
  return (args) => {
    let missing = false;
    const key = template.replace(PLACEHOLDER, (_m, path: string) => {
      const part = keyPart(valueAt(args, path.trim()));
      if (part === null) missing = true;
      return part ?? '';
    });
    return missing ? null : key;
  };
}

/**
 * Compiles a rule for the tool `toolName` (the prefix of a hash key without `prefix`).
 * Undefined when there is no rule: a write then has no key (PRECONDITION
 * `missing_operation_key`) unless the planner names one explicitly.
 */
export function compileOperationKey(
  rule: OperationKeyRule | undefined,
  toolName: string,
  nonSemantic: readonly string[] = [],
): OperationKeyFn | undefined {
  if (rule === undefined) return undefined;
  if (typeof rule === 'string') return compileTemplate(rule);
  const prefix = rule.prefix === undefined ? () => toolName : compileTemplate(rule.prefix);
  return (args) => {
    const head = prefix(args);
    if (head === null) return null;
    const picked =
      rule.hashOf === 'args'
        ? normalizeCall(toolName, args, { nonSemantic }).canonicalArgs
        : Object.fromEntries(rule.hashOf.map((p) => [p, valueAt(args, p) ?? null]));
    const hash = createHash('sha256').update(canonicalJson(picked)).digest('hex').slice(0, 32);
    return `${head}:${hash}`;
  };
}
