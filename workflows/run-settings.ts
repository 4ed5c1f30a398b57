/**
 * What a run is configured with once its input and its script are read together. A
 * scripted run takes the script file's own `config`, `completed` and
 * `initialProgressVersion` exactly as the offline replay does (docs/spec.md §6, §7), so a
 * file gives the same outcome through `npm run replay`, `agentctl start --script`, the
 * client API and the demo; settings given explicitly with the run win, key by key.
 */
import type { ResolvedRunInput } from '../common/contracts';
import { guardProfile, parseReplayFile, type GuardConfigInput } from '../guard';
import { scriptHead } from './script-ref';

/** The resolved settings of a run. */
export interface RunSettings {
  /** The guard's configuration: the script's `config`, overridden by the run's `guard`. */
  readonly guardConfig: GuardConfigInput;
  /** Operation keys already completed: the script's `completed`, then the run's. */
  readonly completed: readonly string[];
  /**
   * The progress version the run starts from, or undefined when it must be read from
   * external state first (a live run, or a run without one).
   */
  readonly initialProgressVersion: number | undefined;
  /** The script file's `profile`, when it names one (a scripted run decided as at that profile). */
  readonly scriptProfile: string | undefined;
}

/**
 * Reads the run input and its script together (see the module comment). `llmProfile`: a fresh
 * LLM run starts from the `llm` profile (guard/profiles.ts); a scripted run, or a run restored
 * from a checkpoint (its guard state has its config already), does not. A script file's
 * `profile` is its own defaults, as in the replay.
 */
export function resolveRunSettings(input: ResolvedRunInput, llmProfile = false): RunSettings {
  const script =
    input.planner.kind === 'scripted' && input.planner.script !== undefined
      ? parseReplayFile(scriptHead(input.planner.script))
      : null;
  const live = input.planner.kind === 'scripted' && input.planner.live;
  // Only the keys the run really sets override the file: `guard` is parsed without
  // defaults, so `guard: {}` (what agentctl sends without flags) overrides nothing.
  const overrides = Object.fromEntries(
    Object.entries(input.guard).filter(([, v]) => v !== undefined),
  ) as GuardConfigInput;
  const llm = input.planner.kind !== 'scripted';
  const profile =
    llmProfile && llm ? guardProfile('llm') : script?.profile ? guardProfile(script.profile) : {};
  return {
    guardConfig: { ...profile, ...(script?.config ?? {}), ...overrides },
    completed: [...(script?.completed ?? []), ...input.completed],
    scriptProfile: script?.profile,
    // Fixture mode measures progress by the script, as the offline replay does; live mode by the world.
    initialProgressVersion:
      input.initialProgressVersion ?? (live ? undefined : script?.initialProgressVersion),
  };
}
