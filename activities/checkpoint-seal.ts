/**
 * Integrity of checkpoints (docs/spec.md §7.10): a checkpoint leaves the run in its result
 * (for `resume --from`) and in continue-as-new input, and comes back as run input — which
 * anyone who can start a run could forge. The worker seals it with an HMAC under a key only
 * workers hold, and a run refuses a checkpoint whose seal does not match or whose shape is
 * wrong, with a clear error, before it restores anything.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { agentConfigDir } from '../connection/config-dir';
import { checkpointSchema, type Checkpoint } from '../common/contracts';
import { canonicalJson } from '../guard/canonical';

/**
 * Where older workers kept the key, relative to the working directory: still
 * used when it exists there, so a deployment keeps its key (and its sealed checkpoints).
 */
export const LEGACY_CHECKPOINT_KEY_FILE = 'data/checkpoint.key';

/**
 * The checkpoint key file a worker uses when none is named: the legacy `./data/checkpoint.key`
 * when it exists, else `<config dir>/checkpoint.key` (connection/config-dir.ts: absolute, so
 * workers started from different directories seal alike).
 */
export function defaultCheckpointKeyFile(env: NodeJS.ProcessEnv = process.env): string {
  if (existsSync(LEGACY_CHECKPOINT_KEY_FILE)) return LEGACY_CHECKPOINT_KEY_FILE;
  const dir = agentConfigDir(env);
  if (dir === null)
    throw new TypeError(
      'no home directory for the checkpoint key (~/.config/agent-loop-guard/checkpoint.key): set AGENT_CHECKPOINT_KEY_FILE or AGENT_CHECKPOINT_KEY',
    );
  return join(dir, 'checkpoint.key');
}

/** The HMAC key: `AGENT_CHECKPOINT_KEY` (base64, ≥ 32 bytes; every worker of a fleet needs the same), else a local file. */
export function checkpointKeyFromEnv(env: NodeJS.ProcessEnv = process.env): Buffer {
  const given = env.AGENT_CHECKPOINT_KEY;
  if (given) {
    const key = Buffer.from(given, 'base64');
    if (key.length < 32) throw new TypeError('AGENT_CHECKPOINT_KEY must be at least 32 bytes, base64');
    return key;
  }
  const file = env.AGENT_CHECKPOINT_KEY_FILE || defaultCheckpointKeyFile(env);
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
}

/** The answer to `openCheckpoint`. */
export type OpenedCheckpoint = { ok: true; checkpoint: Checkpoint } | { ok: false; detail: string };

/** The seal activities over one key. */
export function createCheckpointActivities(key: Buffer) {
  const macOf = (cp: Omit<Checkpoint, 'seal'>): string =>
    'hmac-sha256:' + createHmac('sha256', key).update(canonicalJson(cp)).digest('base64');

  /** Seals a checkpoint (the `seal` field is replaced). */
  async function sealCheckpoint(cp: Checkpoint): Promise<Checkpoint> {
    const { seal: _old, ...rest } = cp;
    return { ...rest, seal: macOf(rest) };
  }

  /**
   * The seal of a checkpoint, only: the workflow attaches it, so the checkpoint crosses
   * history once (this activity's input) instead of twice.
   */
  async function checkpointSeal(cp: Checkpoint): Promise<string> {
    const { seal: _old, ...rest } = cp;
    return macOf(rest);
  }

  /** Validates a checkpoint's shape and seal; never throws for a bad checkpoint, says why. */
  async function openCheckpoint(value: unknown): Promise<OpenedCheckpoint> {
    const parsed = checkpointSchema.safeParse(value);
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      return {
        ok: false,
        detail: `checkpoint refused: ${i?.path.join('.') || '(root)'}: ${i?.message ?? 'invalid'}`,
      };
    }
    const { seal, ...rest } = value as Checkpoint;
    if (!seal)
      return {
        ok: false,
        detail: 'checkpoint refused: it carries no seal (only checkpoints a worker sealed are accepted)',
      };
    const want = Buffer.from(macOf(rest));
    const got = Buffer.from(seal);
    if (want.length !== got.length || !timingSafeEqual(want, got))
      return {
        ok: false,
        detail: 'checkpoint refused: its seal does not match (forged or edited, or sealed with another key)',
      };
    return { ok: true, checkpoint: value as Checkpoint };
  }

  return { sealCheckpoint, checkpointSeal, openCheckpoint };
}
