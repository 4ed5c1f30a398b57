/**
 * The run of a framework guard (core/framework-guard.ts): the core's run (core/run.ts) built
 * from the guard's options or the checkpoint it continues from, upserting the search attributes
 * when asked to. Workflow code.
 */
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { checkpointSchema, type Checkpoint } from '../common/contracts';
import { LEDGER_NEEDS_HUMAN_CODES, LoopGuard, TerminalState } from '../guard';
import { GuardedRun } from './run';
import { searchAttributesOf } from './views';
import { guardRefusal, type FrameworkGuardOptions } from './framework-types';

/** The checkpoint given to continue from, checked for its shape (a clear refusal, nothing run). */
function checkpointOfOption(raw: unknown): Checkpoint | undefined {
  if (raw === undefined) return undefined;
  const parsed = checkpointSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(checkpoint)'}: ${i.message}`);
    throw guardRefusal('invalid_option', `checkpoint is not a guard checkpoint: ${problems.join('; ')}`);
  }
  return raw as Checkpoint;
}

/** A framework agent's run: the core's, upserting the search attributes when asked to. */
export class FrameworkRun extends GuardedRun {
  constructor(
    runId: string,
    guard: LoopGuard,
    traceLimit: number,
    cp: Checkpoint | undefined,
    private readonly searchAttributes: boolean,
  ) {
    super(runId, guard, traceLimit, cp);
  }

  /** The run of this workflow for `options`: a new guard, or the one of `options.checkpoint`. */
  static of(options: FrameworkGuardOptions): FrameworkRun {
    const cp = checkpointOfOption(options.checkpoint);
    // The guard's codes that need a person: the same list as an agentRun's (guard/reasons.ts).
    const guard = cp
      ? LoopGuard.fromJSON(cp.guard, { needsHumanCodes: LEDGER_NEEDS_HUMAN_CODES })
      : new LoopGuard(options.guard ?? {}, {
          startMs: Date.now(),
          needsHumanCodes: LEDGER_NEEDS_HUMAN_CODES,
        });
    const runId = workflowInfo().workflowId;
    return new FrameworkRun(runId, guard, options.traceLimit ?? 2000, cp, options.searchAttributes ?? false);
  }

  override stop(...args: Parameters<GuardedRun['stop']>): void {
    super.stop(...args);
    this.publish();
  }

  /** Upserts the core's search attributes: RUNNING while it runs (a resumed run too), then how it ended. */
  override publish(upsert = true, _summary: string | null = null, ended: TerminalState | null = null): void {
    if (upsert && this.searchAttributes) upsertSearchAttributes(searchAttributesOf(this, ended));
  }
}
