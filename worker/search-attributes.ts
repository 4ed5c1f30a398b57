/**
 * The worker's start-up check of the namespace's custom search attributes (issue #8).
 *
 * The agent-run workflow upserts AgentState / AgentGuardReason / AgentSteps (and AgentRootRun in agent trees)
 * (common/search-attributes.ts, docs/spec.md §7). On a namespace without them every workflow
 * task fails with `BadSearchAttributes` and is retried forever, so a run never gets going
 * and `agentctl start --wait` ends in "Failed to query Workflow". A worker therefore checks
 * before it polls:
 *
 *  - every attribute present with the right type → nothing to do;
 *  - some missing and registration allowed (the default; `AGENT_REGISTER_SEARCH_ATTRIBUTES`)
 *    → `OperatorService.AddSearchAttributes`, then re-list until they are visible (bounded);
 *  - otherwise (registration off, refused, or an attribute registered with another type)
 *    → a {@link SearchAttributesError} naming each attribute and the exact
 *    `temporal operator search-attribute create` commands.
 *
 * Works with a `@temporalio/worker` NativeConnection and a `@temporalio/client` Connection
 * (both expose `operatorService`).
 */
import type { OperatorService } from '@temporalio/client';
import { AgentLoopGuardError } from '../common/errors';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import {
  SEARCH_ATTRIBUTES,
  type CliSearchAttributeType,
  type SearchAttributeName,
} from '../common/search-attributes';

/** The env var that switches registration off (`false`) or the whole check off (`skip`). */
export const REGISTER_ENV_VAR = 'AGENT_REGISTER_SEARCH_ATTRIBUTES';

/**
 * What a worker does about the search attributes at start:
 * `register` (check, register what is missing), `check` (check only, fail when something is
 * missing), `skip` (no check at all, for a namespace where even listing is not allowed).
 */
export type SearchAttributesMode = 'register' | 'check' | 'skip';

/** The part of a connection the check uses. */
export interface OperatorConnection {
  readonly operatorService: Pick<OperatorService, 'listSearchAttributes' | 'addSearchAttributes'>;
}

/** Options of {@link ensureSearchAttributes}. */
export interface EnsureSearchAttributesOptions {
  /** Register missing attributes (default true). `false`: check only. */
  readonly register?: boolean;
  /** How long to re-list after registering until the attributes are visible (default 10 s). */
  readonly visibleTimeoutMs?: number;
  /** Pause between two listings while waiting (default 200 ms). */
  readonly pollMs?: number;
}

/** What {@link ensureSearchAttributes} did. */
export interface EnsureSearchAttributesResult {
  /** Attributes this call registered (empty when all were there already). */
  readonly registered: readonly SearchAttributeName[];
}

/** An attribute present with another type than common/search-attributes.ts declares. */
export interface WrongTypeAttribute {
  readonly name: SearchAttributeName;
  readonly expected: CliSearchAttributeType;
  /** The type the namespace has, in CLI spelling (or the raw enum value). */
  readonly actual: string;
}

/** The namespace lacks (or mistypes) search attributes and the worker must not start. */
export class SearchAttributesError extends AgentLoopGuardError {
  override readonly name = 'SearchAttributesError';
  readonly code = 'search_attributes_missing';
  constructor(
    message: string,
    readonly namespace: string,
    readonly missing: readonly SearchAttributeName[],
    readonly wrongType: readonly WrongTypeAttribute[],
  ) {
    super(message);
  }
}

// gRPC status codes (numbers are part of the gRPC spec).
const GRPC_INVALID_ARGUMENT = 3;
const GRPC_NOT_FOUND = 5;
const GRPC_PERMISSION_DENIED = 7;
const GRPC_UNIMPLEMENTED = 12;
const GRPC_UNAUTHENTICATED = 16;

/** CLI spelling (`Keyword`, `KeywordList`) → the SDK's `KEYWORD`, `KEYWORD_LIST`. */
const sdkTypeName = (t: string) => t.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();

/** The proto enum value (`IndexedValueType`) of a CLI type name. */
function indexedValueType(cliType: string): number {
  const v = encodeSearchAttributeIndexedValueType(sdkTypeName(cliType) as never);
  if (v === undefined) throw new Error(`unknown search attribute type ${cliType}`);
  return v;
}

const CLI_TYPES = ['Text', 'Keyword', 'Int', 'Double', 'Bool', 'Datetime', 'KeywordList'] as const;

/** The CLI spelling of a proto enum value, for messages. */
function cliTypeName(v: number): string {
  return CLI_TYPES.find((t) => indexedValueType(t) === v) ?? `type #${v}`;
}

const NAMES = Object.keys(SEARCH_ATTRIBUTES) as SearchAttributeName[];

/** `temporal operator search-attribute create …` for each name (one command per attribute). */
export function createCommands(namespace: string, names: readonly SearchAttributeName[] = NAMES): string[] {
  return names.map(
    (n) =>
      `temporal operator search-attribute create --namespace ${namespace} --name ${n} --type ${SEARCH_ATTRIBUTES[n]}`,
  );
}

interface Comparison {
  missing: SearchAttributeName[];
  wrongType: WrongTypeAttribute[];
}

function compare(have: Record<string, number | null | undefined>): Comparison {
  const missing: SearchAttributeName[] = [];
  const wrongType: WrongTypeAttribute[] = [];
  for (const name of NAMES) {
    const actual = have[name];
    if (actual === undefined || actual === null) missing.push(name);
    else if (actual !== indexedValueType(SEARCH_ATTRIBUTES[name]))
      wrongType.push({ name, expected: SEARCH_ATTRIBUTES[name], actual: cliTypeName(actual) });
  }
  return { missing, wrongType };
}

function grpcCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

function grpcMessage(err: unknown): string {
  const e = err as { details?: unknown; message?: unknown } | null;
  const details = typeof e?.details === 'string' ? e.details.trim() : '';
  return details || (typeof e?.message === 'string' ? e.message.trim() : String(err));
}

const list = (names: readonly string[]) => names.join(', ');
const indent = (lines: readonly string[]) => lines.map((l) => `  ${l}`).join('\n');

/** The tail of every message: the commands, and how the CLI finds the server. */
function howToFix(namespace: string, names: readonly SearchAttributeName[]): string {
  return [
    `Create ${names.length === 1 ? 'it' : 'them'} once (the CLI reads the same TEMPORAL_ADDRESS, TEMPORAL_API_KEY and TEMPORAL_TLS_* variables as the worker):`,
    indent(createCommands(namespace, names)),
    '(Temporal Cloud: the same commands, or `tcld namespace search-attributes add`, or the Cloud UI.)',
  ].join('\n');
}

function describeMissing(missing: readonly SearchAttributeName[]): string {
  return list(missing.map((n) => `${n} (${SEARCH_ATTRIBUTES[n]})`));
}

const WHY =
  'The agent-run workflow sets them on every run (docs/spec.md §7); without them each run fails its workflow task with BadSearchAttributes and never starts.';

function wrongTypeError(namespace: string, c: Comparison): SearchAttributesError {
  const lines = [
    `Temporal namespace "${namespace}" has search attributes with the wrong type: ${list(
      c.wrongType.map((w) => `${w.name} is ${w.actual}, expected ${w.expected}`),
    )}.`,
    'A search attribute cannot change its type, and the worker will not remove one. Remove and re-create it:',
    indent(
      c.wrongType.map(
        (w) => `temporal operator search-attribute remove --namespace ${namespace} --name ${w.name}`,
      ),
    ),
    indent(
      createCommands(
        namespace,
        c.wrongType.map((w) => w.name),
      ),
    ),
  ];
  if (c.missing.length > 0)
    lines.push(`Also missing: ${describeMissing(c.missing)}.`, howToFix(namespace, c.missing));
  return new SearchAttributesError(lines.join('\n'), namespace, c.missing, c.wrongType);
}

async function listCustom(
  connection: OperatorConnection,
  namespace: string,
): Promise<Record<string, number | null | undefined>> {
  try {
    const res = await connection.operatorService.listSearchAttributes({ namespace });
    return (res.customAttributes ?? {}) as Record<string, number | null | undefined>;
  } catch (err) {
    const code = grpcCode(err);
    if (code === GRPC_NOT_FOUND)
      throw new Error(
        `Temporal namespace "${namespace}" does not exist (${grpcMessage(err)}). ` +
          `Create it (temporal operator namespace create --namespace ${namespace}) or set TEMPORAL_NAMESPACE.`,
      );
    const refused =
      code === GRPC_PERMISSION_DENIED || code === GRPC_UNIMPLEMENTED || code === GRPC_UNAUTHENTICATED;
    if (!refused)
      throw new Error(
        `Cannot list the search attributes of Temporal namespace "${namespace}": ${grpcMessage(err)}`,
      );
    throw new SearchAttributesError(
      [
        `Cannot list the search attributes of Temporal namespace "${namespace}" (${grpcMessage(err)}), ` +
          'so the worker cannot check that the ones the agent-run workflow sets exist: ' +
          `${describeMissing(NAMES)}.`,
        `If they exist, set ${REGISTER_ENV_VAR}=skip to start without the check.`,
        howToFix(namespace, NAMES),
      ].join('\n'),
      namespace,
      NAMES,
      [],
    );
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Checks that `namespace` has every attribute of SEARCH_ATTRIBUTES with its type; registers
 * the missing ones when `register` (default), waiting until they are visible.
 *
 * @throws SearchAttributesError when something is missing and may not or could not be
 *   registered, or an attribute has another type; the message names each attribute and the
 *   `temporal operator search-attribute create` commands.
 */
export async function ensureSearchAttributes(
  connection: OperatorConnection,
  namespace: string,
  options: EnsureSearchAttributesOptions = {},
): Promise<EnsureSearchAttributesResult> {
  const register = options.register ?? true;
  const before = compare(await listCustom(connection, namespace));
  if (before.wrongType.length > 0) throw wrongTypeError(namespace, before);
  if (before.missing.length === 0) return { registered: [] };

  const missingText = `Temporal namespace "${namespace}" is missing the search attributes ${describeMissing(before.missing)}.`;
  if (!register) {
    throw new SearchAttributesError(
      [
        missingText,
        WHY,
        `The worker does not register them: registration is off (${REGISTER_ENV_VAR}=false).`,
        howToFix(namespace, before.missing),
      ].join('\n'),
      namespace,
      before.missing,
      [],
    );
  }

  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        before.missing.map((n) => [n, indexedValueType(SEARCH_ATTRIBUTES[n])]),
      ),
    });
  } catch (err) {
    const code = grpcCode(err);
    const why =
      code === GRPC_PERMISSION_DENIED || code === GRPC_UNAUTHENTICATED
        ? "permission denied: the worker's credentials may not manage search attributes (on Temporal Cloud an admin creates them)"
        : code === GRPC_UNIMPLEMENTED
          ? 'this Temporal service does not let clients register search attributes'
          : code === GRPC_INVALID_ARGUMENT
            ? 'the server rejected them'
            : 'the call failed';
    throw new SearchAttributesError(
      [
        missingText,
        WHY,
        `The worker tried to register them and the server refused: ${why} (${grpcMessage(err)}).`,
        howToFix(namespace, before.missing),
      ].join('\n'),
      namespace,
      before.missing,
      [],
    );
  }

  // Registration may take a moment to show (e.g. Elasticsearch visibility): re-list, bounded.
  const deadline = Date.now() + (options.visibleTimeoutMs ?? 10_000);
  for (;;) {
    const after = compare(await listCustom(connection, namespace));
    // Registering an existing name with another type "succeeds" and keeps the old type:
    // a concurrent registration with a different type shows up here.
    if (after.wrongType.length > 0) throw wrongTypeError(namespace, after);
    if (after.missing.length === 0) return { registered: before.missing };
    if (Date.now() >= deadline) {
      throw new SearchAttributesError(
        [
          `Registered the search attributes ${describeMissing(before.missing)} in Temporal namespace "${namespace}", ` +
            `but ${list(after.missing)} ${after.missing.length === 1 ? 'is' : 'are'} still not visible after ${
              options.visibleTimeoutMs ?? 10_000
            } ms.`,
          'Check with `temporal operator search-attribute list --namespace ' + namespace + '`; if missing:',
          howToFix(namespace, after.missing),
        ].join('\n'),
        namespace,
        after.missing,
        [],
      );
    }
    await sleep(options.pollMs ?? 200);
  }
}
