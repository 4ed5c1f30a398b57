/** The operator activities: the workflow asks, the worker's registry answers. */
import type { OperatorCheck, OperatorRegistry, OperatorVerdict } from './registry';

/**
 * Input of `verifyOperator`: a resume or stop as the workflow received it. The freshness
 * rule is always the 5-minute skew here: a workflow cannot ask for the approvals' rule.
 */
export type VerifyOperatorInput = Omit<OperatorCheck, 'freshness'>;

/** The operator activities over one registry. */
export function createOperatorActivities(registry: OperatorRegistry) {
  /** Checks an operator request's signature and authority (docs/spec.md §7.3). */
  async function verifyOperator(input: VerifyOperatorInput): Promise<OperatorVerdict> {
    return registry.check({ ...input, freshness: 'skew' });
  }
  return { verifyOperator };
}
