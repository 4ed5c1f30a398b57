/**
 * Who decides an approval and the key that signs for them: the decider's name (the key's
 * operator, else the one given, else from the environment), the operator key read from its
 * file or given inline, the reason every decision needs, and the resume `approve --resume`
 * sends signed with the same key. Apart from the decisions (client/approvals.ts) because these
 * are the identity rules, the same for an approval and a denial: a key fixes the actor, and
 * another name is bad input (exit 2).
 */
import type { ResumeRequest } from '../common/contracts';
import { readOperatorKey, signRequest, type OperatorKeyFile } from '../operators/sign';
import type { ApprovalStoreOptions } from './approval-store-access';
import { CliError, Exit } from './format';
import type { ExpectedStop } from './pending-approval';

/** Who decides, why, and the key that signs for them. */
export interface DecideOptions extends ApprovalStoreOptions {
  /** Why: what was checked (stored, signed and audited). */
  readonly reason: string;
  /**
   * Who decides: default the key's operator; without a key AGENTCTL_ACTOR, else USER, else
   * `operator`. With a key, another name is refused (exit 2).
   */
  readonly actor?: string;
  /**
   * The operator key to sign with: the key file's contents or its path. Default the file of
   * AGENT_OPERATOR_KEY_FILE; `null`: unsigned (a worker with an operators file will not use it).
   */
  readonly key?: OperatorKeyFile | string | null;
  /**
   * The stop and call the decider saw (a page, a list printed earlier): when the run now waits
   * on another stop or call, the decision is refused (exit 3) and nothing is stored, so nobody
   * approves a call they were not shown. Default: whatever the run waits on now.
   */
  readonly expectedStop?: ExpectedStop;
}

/** A decision's reason: a non-empty text (what was checked), else exit 2. */
export function reasonOf(reason: unknown): string {
  if (typeof reason !== 'string' || reason.trim() === '')
    throw new CliError(Exit.USAGE, 'an approval decision needs a reason (what was checked)');
  return reason;
}

/** The actor without a key or an explicit name: AGENTCTL_ACTOR, else USER, else `operator`. */
function envActor(env: NodeJS.ProcessEnv): string {
  return env.AGENTCTL_ACTOR || env.USER || env.USERNAME || 'operator';
}

/**
 * Who decides, and the key that signs for them: with a key its operator (another actor is
 * exit 2); without one the actor named, else from the environment, unsigned.
 */
export function operatorOf(o: DecideOptions): { actor: string; key: OperatorKeyFile | null } {
  const env = o.env ?? process.env;
  const key = keyOf(o.key === undefined ? env.AGENT_OPERATOR_KEY_FILE || null : o.key);
  const actor = o.actor ?? key?.operator ?? envActor(env);
  if (typeof actor !== 'string' || actor.trim() === '')
    throw new CliError(Exit.USAGE, 'the actor must be a non-empty name');
  if (key && key.operator !== actor)
    throw new CliError(
      Exit.USAGE,
      `actor ${actor} does not match the signing key's operator "${key.operator}"`,
    );
  return { actor, key };
}

/** The operator key: read from a path, or checked when given inline; a bad one is exit 2. */
function keyOf(key: OperatorKeyFile | string | null): OperatorKeyFile | null {
  if (key === null) return null;
  if (typeof key === 'string') {
    try {
      return readOperatorKey(key);
    } catch (err) {
      throw new CliError(Exit.USAGE, (err as Error).message, { cause: err });
    }
  }
  if (typeof key !== 'object' || typeof key.operator !== 'string' || typeof key.privateKey !== 'string')
    throw new CliError(Exit.USAGE, 'operator key: expected {"operator", "privateKey"}');
  return key;
}

/** The resume `approve` sends, signed with the operator's key when there is one. */
export function resumeOf(key: OperatorKeyFile | null, runId: string, req: ResumeRequest): ResumeRequest {
  if (!key) return req;
  const fields = { ...req, precondition: req.precondition ?? '' };
  return { ...fields, auth: signRequest(key, 'resume', runId, fields) };
}
