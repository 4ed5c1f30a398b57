/**
 * An operator action (stop, resume, approve) sent to a run that no guard engine answers: neither
 * an `agentRun` nor a workflow whose guard installed its handlers (`guardAgent(…).installHandlers()`,
 * agent-loop-guard/ai-sdk). Such a run would silently drop a stop signal and answer an update
 * "no registered handler": said plainly instead, naming its workflow type, and nothing is sent
 * (bad input).
 */
import { QueryNotRegisteredError, type WorkflowHandle } from '@temporalio/client';
import { AgentLoopGuardError } from '../common/errors';
import { WORKFLOW_TYPE } from '../common/contracts';
import { decodableOr } from './codec-check';

/** The run is of no engine this package knows (it answers none of the guard's queries or updates). */
export class NotAGuardedRunError extends AgentLoopGuardError {
  readonly code = 'not_a_guarded_run';
  constructor(
    readonly workflowId: string,
    readonly workflowType: string,
    action: string,
  ) {
    super(
      `run ${workflowId} is a ${workflowType} workflow that answers none of agent-loop-guard's handlers: ` +
        `neither an ${WORKFLOW_TYPE} nor an agent whose guard installed them (guardAgent(…).installHandlers(), ` +
        `docs/ai-sdk.md); its engine is unknown, so ${action}`,
    );
  }
}

/** True for the SDK's "no such query / update handler" answers. */
export function isMissingHandler(err: unknown): boolean {
  if (err instanceof QueryNotRegisteredError) return true;
  const e = err as { message?: unknown; cause?: { message?: unknown } } | null;
  const text = `${typeof e?.message === 'string' ? e.message : ''} ${typeof e?.cause?.message === 'string' ? e.cause.message : ''}`;
  return /did not register a handler for|no registered handler for update|QueryNotRegistered/i.test(text);
}

/** The error for `handle`'s run, with its workflow type read from the server. */
export async function notAGuardedRun(handle: WorkflowHandle, action: string): Promise<NotAGuardedRunError> {
  const type = await handle
    .describe()
    .then((d) => d.type)
    .catch(() => 'unknown');
  return new NotAGuardedRunError(handle.workflowId, type, action);
}

/**
 * A `.catch` for a query of the guard's: a run without the handler is {@link NotAGuardedRunError},
 * an answer this client cannot decode `PayloadCodecMismatchError`; anything else is rethrown.
 */
export function unanswered(handle: WorkflowHandle, action: string): (err: unknown) => Promise<never> {
  return async (err) => {
    if (isMissingHandler(err)) throw await notAGuardedRun(handle, action);
    return decodableOr(handle, action)(err);
  };
}
