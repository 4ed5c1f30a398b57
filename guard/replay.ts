/**
 * The offline replay of docs/spec.md §6: a trace file plays both the planner and the tools, and
 * the guard decides exactly as it would inside a durable run. Pure: the CLI reads the
 * files, this module parses and decides.
 */
import { z } from 'zod';
import { AgentLoopGuardError } from '../common/errors';
import { TerminalState } from './constants';
import { fingerprintCall, normalizeCall, type ArgsSpec } from './fingerprint';
import { LoopGuard } from './loop-guard';
import { guardProfile, isGuardProfile, UnknownProfileError, type GuardProfileName } from './profiles';
import { stoppedAt } from './outcome';
import { GuardReason } from './reasons';
import { toolErrorToModel } from './tool-error';
import { buildStopReport } from './report';
import { isRepeatEntry, ScriptCursor } from './script-calls';
import {
  guardOverridesSchema,
  toolResultSchema,
  usageSchema,
  type StopReport,
  type ToolResult,
} from './schemas';

const fixtureToolSchema = z
  .object({
    effect: z.enum(['read', 'write']).default('read'),
    defaults: z.record(z.string(), z.unknown()).optional(),
    nonSemantic: z.array(z.string()).optional(),
    /** The tool's free-text args for the near-repeat rule (docs/spec.md §3, Near repeats). */
    similarArgs: z.array(z.string().min(1)).optional(),
  })
  .strict();

const replayCallSchema = z.object({
  tool: z.string({ error: 'required string' }).min(1, 'must not be empty'),
  args: z.unknown().optional(),
  operationKey: z.string().nullable().optional(),
  atMs: z.number({ error: 'must be a number' }).finite().optional(),
  result: toolResultSchema.optional(),
  progressVersion: z.number({ error: 'must be a number' }).finite().optional(),
  usage: usageSchema.optional(),
});

/** The most calls one repeat entry stands for. */
export const MAX_REPEAT_TIMES = 10_000_000;

/** `{ repeat: { times, call } }`: `times` copies of `call`, `{i}` substituted (guard/script-calls.ts). */
const repeatEntrySchema = z
  .object({
    repeat: z
      .object({
        times: z.number({ error: 'must be a number' }).int().min(0).max(MAX_REPEAT_TIMES),
        call: replayCallSchema,
      })
      .strict(),
  })
  .strict();

/** A replay file (docs/spec.md §6). */
export const replayFileSchema = z.object({
  name: z.string().optional(),
  /**
   * The guard profile the file is decided at (guard/profiles.ts): `llm` decides as a fresh LLM
   * run of this version would. Absent: the guard's defaults, as before. `config` overrides it.
   */
  profile: z
    .string()
    .refine(isGuardProfile, { error: (i) => new UnknownProfileError(String(i.input)).message })
    .optional(),
  /** Only the keys set here override the profile (no defaults filled in). */
  config: guardOverridesSchema.optional(),
  initialProgressVersion: z.number().finite().optional(),
  tools: z.record(z.string(), fixtureToolSchema).optional(),
  completed: z.array(z.string()).optional(),
  calls: z.array(z.union([repeatEntrySchema, replayCallSchema]), { error: 'required array' }),
});
/** A parsed replay file. */
export type ReplayFile = z.output<typeof replayFileSchema>;
/** One call of a replay file. */
export type ReplayCall = z.output<typeof replayCallSchema>;
/** One entry of a replay file's `calls`: a call, or a repeat of one. */
export type ReplayEntry = ReplayFile['calls'][number];

/** One entry of the replay output's `decisions`. */
export interface ReplayDecision {
  index: number;
  tool: string;
  decision: 'execute' | 'return_cached_success' | 'steer' | 'stop';
  after?: string;
  /**
   * For `steer`: the rule that refused the call (it did not run; the script goes on). For an
   * executed call whose `after()` gave the `no_progress` note (`noProgressGrace`): `no_progress`.
   */
  reason?: string;
}

/** The replay's output object (docs/spec.md §6). */
export interface ReplayOutcome {
  terminal_state: TerminalState;
  reason: string | null;
  executed: number;
  cached: number;
  stopped_at: number | null;
  decisions: ReplayDecision[];
  report: StopReport | null;
  /** The profile the file was decided at, when one was given (file or `--profile`). */
  profile?: GuardProfileName;
}

/** A replay file that does not fit the format; the message names the field. */
export class ReplayFormatError extends AgentLoopGuardError {
  readonly code = 'replay_format_invalid';

  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : `${out ? '.' : ''}${String(seg)}`;
  return out || '(root)';
}

/** Parses a replay file's JSON value; throws {@link ReplayFormatError} naming the field. */
export function parseReplayFile(value: unknown): ReplayFile {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ReplayFormatError('(root): expected a JSON object', '(root)');
  }
  const parsed = replayFileSchema.safeParse(value);
  if (!parsed.success) {
    const issue = entryIssue(parsed.error.issues[0], value);
    const field = formatPath(issue?.path ?? []);
    let message = issue?.message ?? 'invalid';
    if (issue?.code === 'unrecognized_keys')
      message = `unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    if (issue?.code === 'invalid_union' && field.startsWith('config.'))
      message = 'must be a positive number or null';
    if (issue?.code === 'invalid_union' && field.endsWith('.result')) {
      message =
        'unknown or malformed result (kind must be SUCCESS, RETRYABLE, PENDING, PRECONDITION or FATAL)';
    }
    throw new ReplayFormatError(`${field}: ${message}`, field);
  }
  return parsed.data;
}

type Issue = z.core.$ZodIssue;

/**
 * A `calls` entry that fits neither form is reported as the form it meant (a repeat when it
 * has a `repeat` key, else a call), with that form's own issue and path.
 */
function entryIssue(issue: Issue | undefined, value: object): Issue | undefined {
  if (issue?.code !== 'invalid_union' || issue.path.length !== 2 || issue.path[0] !== 'calls') return issue;
  const entry = (value as { calls?: unknown[] }).calls?.[issue.path[1] as number];
  const inner = issue.errors[isRepeatEntry(entry) ? 0 : 1]?.[0];
  return inner ? { ...inner, path: [...issue.path, ...inner.path] } : issue;
}

/** Args specs of a file's fixture tools (a tool it does not list is a read with no defaults). */
export function fixtureArgsSpecs(file: ReplayFile): Map<string, ArgsSpec> {
  const specs = new Map<string, ArgsSpec>();
  for (const [name, tool] of Object.entries(file.tools ?? {})) {
    specs.set(name, {
      defaults: tool.defaults,
      nonSemantic: tool.nonSemantic,
      similarArgs: tool.similarArgs,
    });
  }
  return specs;
}

const DEFAULT_RESULT: ToolResult = { kind: 'SUCCESS' };

/** Options of {@link replay}. */
export interface ReplayOptions {
  /** The profile to decide at, over the file's own `profile` (an unknown name throws UnknownProfileError). */
  readonly profile?: string;
}

/** Replays a parsed file through a fresh guard. */
export function replay(file: ReplayFile, options: ReplayOptions = {}): ReplayOutcome {
  const profile = options.profile ?? file.profile;
  const defaults = profile === undefined ? {} : guardProfile(profile);
  // At the llm profile a recorded undeclared tool error goes to the model, as in an LLM run.
  const toModel = profile === 'llm';
  const guard = new LoopGuard(
    { ...defaults, ...(file.config ?? {}) },
    {
      startMs: 0,
      initialProgressVersion: file.initialProgressVersion ?? 0,
      completed: file.completed ?? [],
    },
  );
  const specs = fixtureArgsSpecs(file);
  const decisions: ReplayDecision[] = [];
  let executed = 0;
  let cached = 0;
  let atMs = 0;

  const finish = (
    state: TerminalState,
    reason: string | null,
    lastIndex: number | null,
    blocked: { tool: string; fingerprint: string } | null,
  ): ReplayOutcome => ({
    terminal_state: state,
    reason: state === TerminalState.COMPLETED ? null : reason,
    executed,
    cached,
    stopped_at: stoppedAt(state, reason, lastIndex),
    decisions,
    report:
      state === TerminalState.COMPLETED
        ? null
        : buildStopReport(guard, { terminalState: state, reason: reason ?? 'unknown', blockedCall: blocked }),
    ...(profile === undefined ? {} : { profile: profile as GuardProfileName }),
  });

  // Built once: the next call is O(1), not a walk from the first entry.
  const script = new ScriptCursor<ReplayCall>(file.calls);
  for (let index = 0; index < script.length; index++) {
    const raw = script.at(index)!;
    atMs = raw.atMs ?? atMs;
    const spec = specs.get(raw.tool);
    const n = spec?.similarArgs ? normalizeCall(raw.tool, raw.args ?? {}, spec) : null;
    const fingerprint = n ? n.fingerprint : fingerprintCall(raw.tool, raw.args ?? {}, spec);
    const call = {
      tool: raw.tool,
      fingerprint,
      similarKey: n?.similarKey ?? null,
      operationKey: raw.operationKey ?? null,
      usage: raw.usage,
      // An unlisted tool is a read, unless the call names an operation key (a write's).
      effect: file.tools?.[raw.tool]?.effect ?? (raw.operationKey ? 'write' : 'read'),
    };
    const blocked = { tool: raw.tool, fingerprint };
    const before = guard.before(call, atMs);
    if (before.decision === 'stop') {
      decisions.push({ index, tool: raw.tool, decision: 'stop' });
      return finish(before.terminalState, before.reason, index, blocked);
    }
    if (before.decision === 'steer') {
      // Refused and told, not run: the script goes on with its next call (docs/spec.md §3.3).
      decisions.push({ index, tool: raw.tool, decision: 'steer', reason: before.reason });
      continue;
    }
    const isCached = before.decision === 'return_cached_success';
    if (isCached) cached += 1;
    else executed += 1;
    const recorded = isCached ? DEFAULT_RESULT : (raw.result ?? DEFAULT_RESULT);
    const result = toModel ? toolErrorToModel(recorded) : recorded;
    const after = guard.after(call, result, raw.progressVersion ?? guard.progressVersion, atMs);
    decisions.push({
      index,
      tool: raw.tool,
      decision: before.decision,
      after: after.decision,
      ...(after.decision !== 'stop' && after.steer ? { reason: after.steer.reason } : {}),
    });
    if (after.decision === 'stop') return finish(after.terminalState, after.reason, index, blocked);
    if (after.decision === 'complete') return finish(TerminalState.COMPLETED, null, index, null);
  }
  guard.forceStop(GuardReason.PLANNER_EXHAUSTED, TerminalState.PARTIAL);
  return finish(TerminalState.PARTIAL, GuardReason.PLANNER_EXHAUSTED, null, null);
}
