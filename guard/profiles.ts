/**
 * Named sets of guard defaults (docs/spec.md §3 "Profiles", evidence in
 * docs/real-agents.md). `default` is the guard's own schema defaults (what a scripted run, a
 * replay file and `new LoopGuard()` get); `llm` is what a fresh LLM run of this version decides
 * with: the durable run (on `llm-profile-v1`), `npm run replay -- --profile llm` or a replay
 * file's `"profile": "llm"`, and a client that passes {@link guardProfile}`('llm')` itself.
 * A run's own settings (a script's `config`, the run's `guard`) override a profile key by key.
 */
import { AgentLoopGuardError } from '../common/errors';
import type { GuardConfigInput } from './schemas';

/**
 * The `llm` profile, chosen from recorded runs of real GPT-4o / GPT-4.1 agents
 * (docs/real-agents.md): real conversations take 90–470 s, about 16 s per model turn.
 */
export const LLM_PROFILE: Readonly<GuardConfigInput> = Object.freeze({
  /** 50 calls: 2.5x the longest successful run seen; a wandering run is cut at about 13 min of turns. */
  maxSteps: 50,
  /** 20 minutes of the agent's own time (waits are off the clock): 2.5x the longest real run, 50 turns at 16 s fit. */
  maxMs: 20 * 60_000,
  /** 2 million tokens: 50 turns of a 40k-token context. */
  maxTokens: 2_000_000,
  /** $10 a run: 2 million tokens at the dearest list price of the models measured, with room. */
  maxCostUsd: 10,
  /** An identical call runs twice in a window; the third is steered (0 false steers measured). */
  sameCallLimit: 2,
  /** Three calls in a row without progress are told to the model... */
  noProgressLimit: 3,
  /** ...and three more stop the run: 0 successful runs stopped `no_progress` (docs/real-agents.md). */
  noProgressGrace: 3,
  /** Two refusals go back to the model as guard notes before a refusal stops the run. */
  steerLimit: 2,
  /** What the guard knows of a failed call survives new reads (guard/failure-memory.ts). */
  keepFailures: true,
});

/**
 * The `coding` profile, chosen from recorded runs of real coding agents (docs/real-agents.md
 * "Coding agents"): an LLM agent that works in a repository through a shell or an editor makes
 * 50–130 calls in a healthy run (a customer-service run makes at most 20), over up to 15 min
 * and 4.3 million tokens. The repeat rules are the `llm` profile's; only the budgets differ.
 */
export const CODING_PROFILE: Readonly<GuardConfigInput> = Object.freeze({
  ...LLM_PROFILE,
  /** 300 calls: 2.3x the longest resolved run seen (132). */
  maxSteps: 300,
  /** 40 minutes of the agent's own time: 2.6x the longest resolved run (15 min). */
  maxMs: 40 * 60_000,
  /** 10 million tokens: 2.3x the most a resolved run used (4.3 million; whole contexts resent each turn). */
  maxTokens: 10_000_000,
  /** $10 a run: 5x the dearest resolved run ($1.91). */
  maxCostUsd: 10,
});

/** Every profile by name. */
export const GUARD_PROFILES: Readonly<Record<GuardProfileName, Readonly<GuardConfigInput>>> = Object.freeze({
  default: Object.freeze({}),
  llm: LLM_PROFILE,
  coding: CODING_PROFILE,
});

/** The names of the profiles. */
export const GUARD_PROFILE_NAMES = ['default', 'llm', 'coding'] as const;
/** One of {@link GUARD_PROFILE_NAMES}. */
export type GuardProfileName = (typeof GUARD_PROFILE_NAMES)[number];

/** A profile name that does not exist. */
export class UnknownProfileError extends AgentLoopGuardError {
  readonly code = 'unknown_profile';
  constructor(readonly profile: string) {
    super(`unknown guard profile "${profile}" (known: ${GUARD_PROFILE_NAMES.join(', ')})`);
  }
}

/** Whether `name` names a profile. */
export function isGuardProfile(name: unknown): name is GuardProfileName {
  return typeof name === 'string' && (GUARD_PROFILE_NAMES as readonly string[]).includes(name);
}

/** The defaults of profile `name` (a copy); an unknown name throws {@link UnknownProfileError}. */
export function guardProfile(name: string): GuardConfigInput {
  if (!isGuardProfile(name)) throw new UnknownProfileError(String(name));
  return { ...GUARD_PROFILES[name] };
}
