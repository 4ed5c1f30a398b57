/** The operator activities: the workflow asks, the worker's registry answers. */
import type { OperatorAction, OperatorAuth, SignedFields } from '../../common/operator-auth';
import type { OperatorRegistry, OperatorVerdict } from './registry';

/** Input of `verifyOperator`. */
export interface VerifyOperatorInput {
  readonly action: OperatorAction;
  readonly workflowId: string;
  readonly fields: SignedFields;
  readonly auth?: OperatorAuth | null;
  readonly stopReason?: string | null;
}

/** The operator activities over one registry. */
export function createOperatorActivities(registry: OperatorRegistry) {
  /** Checks an operator request's signature and authority (docs/spec.md §7.3). */
  async function verifyOperator(input: VerifyOperatorInput): Promise<OperatorVerdict> {
    return registry.check(input);
  }
  return { verifyOperator };
}
