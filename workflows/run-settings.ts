/**
 * What a run is configured with once its input and its script are read together. A
 * scripted run takes the script file's own `config`, `completed` and
 * `initialProgressVersion` exactly as the offline replay does (docs/spec.md §6, §7), so a
 * file gives the same outcome through `npm run replay`, `agentctl start --script`, the
 * client API and the demo; settings given explicitly with the run win, key by key.
 */
import type { ResolvedRunInput } from '../common/contracts';
import { guardProfile, parseReplayFile, type GuardConfigInput } from '../guard';
import { PATCH_STEER_DEFAULT, type Patches } from './run-patches';
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

/** How many refusals an LLM run steers back to its model when the run does not say (docs/spec.md §3.3). */
export const DEFAULT_LLM_STEER_LIMIT = 2;

/**
 * The defaults a fresh run's guard starts from: `llm` (the `llm` profile, guard/profiles.ts) for
 * an LLM run on `llm-profile-v1`, `steer` (only `steerLimit` 2) for one recorded on
 * `llm-steer-default-v1` before it, none for a scripted run or a run restored from a checkpoint
 * (its guard state has its config already).
 */
export function llmDefaultsOf(
  input: ResolvedRunInput,
  patches: Patches,
  fromCheckpoint: boolean,
): 'llm' | 'steer' | false {
  const llm = input.planner.kind !== 'scripted';
  // Asked for every LLM run (a continued one too: it also decides how tool errors are handled).
  const profile = patches.llmProfile(llm);
  if (fromCheckpoint || !llm) return false;
  if (profile) return 'llm';
  return patches.has(PATCH_STEER_DEFAULT) ? 'steer' : false;
}

/**
 * Reads the run input and its script together (see the module comment). `llmDefaults`
 * ({@link llmDefaultsOf}): `llm`, an LLM run starts from the `llm` profile; `steer`, an LLM run
 * that sets no `steerLimit` gets {@link DEFAULT_LLM_STEER_LIMIT}; false (runs recorded before
 * steering, scripted runs): none. A script file's `profile` is its own defaults, as in the replay.
 */
export function resolveRunSettings(
  input: ResolvedRunInput,
  llmDefaults: 'llm' | 'steer' | boolean = false,
): RunSettings {
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
  const steer =
    (llmDefaults === true || llmDefaults === 'steer') && llm && overrides.steerLimit === undefined
      ? { steerLimit: DEFAULT_LLM_STEER_LIMIT }
      : {};
  const profile =
    llmDefaults === 'llm' && llm ? guardProfile('llm') : script?.profile ? guardProfile(script.profile) : {};
  return {
    guardConfig: { ...profile, ...(script?.config ?? {}), ...steer, ...overrides },
    completed: [...(script?.completed ?? []), ...input.completed],
    scriptProfile: script?.profile,
    // Fixture mode measures progress by the script, as the offline replay does; live mode by the world.
    initialProgressVersion:
      input.initialProgressVersion ?? (live ? undefined : script?.initialProgressVersion),
  };
}
