/**
 * The planner errors: their names are the Temporal failure types the workflow matches
 * on, so they are checked against the contract list in common/planner.ts.
 */
import {
  EndpointConfigError,
  EndpointNotConfiguredError,
  InvalidPlannerSpecError,
  MissingApiKeyError,
  PlannerAuthError,
  PlannerError,
  PlannerProtocolError,
  PlannerRequestError,
  PlannerUnavailableError,
  PriceTableError,
} from '../../planners/errors';
import { PriceTableError as PriceTableErrorOfPricing } from '../../planners/pricing';
import { NON_RETRYABLE_PLANNER_ERRORS } from '../../common/planner';

const cause = new Error('underlying');
const nonRetryable: PlannerError[] = [
  new MissingApiKeyError('OPENAI_API_KEY', 'openai', { cause }),
  new PlannerAuthError('denied', 401, { cause }),
  new PlannerRequestError('bad', 400, { cause }),
  new PlannerProtocolError('mismatch', { cause }),
  new PriceTableError('junk', { cause }),
  new EndpointNotConfiguredError('no such endpoint', 'x', ['openai'], { cause }),
  new EndpointConfigError('bad config', { cause }),
  new InvalidPlannerSpecError('bad spec', { cause }),
];

describe('planner errors', () => {
  it.each(nonRetryable.map((e) => [e.name, e]))(
    '%s is non-retryable and listed in NON_RETRYABLE_PLANNER_ERRORS',
    (name, err) => {
      expect(err.retryable).toBe(false);
      expect(NON_RETRYABLE_PLANNER_ERRORS).toContain(name);
      expect(err.name).toBe(err.constructor.name);
    },
  );

  it('lists PlannerUnavailableError nowhere: Temporal retries it', () => {
    const err = new PlannerUnavailableError('busy', 429, 7000);
    expect(err).toMatchObject({
      name: 'PlannerUnavailableError',
      retryable: true,
      status: 429,
      retryAfterMs: 7000,
    });
    expect(NON_RETRYABLE_PLANNER_ERRORS).not.toContain(err.name);
  });

  it('are Errors and PlannerErrors that pass their cause on', () => {
    for (const err of nonRetryable) {
      expect(err).toBeInstanceOf(Error);
      expect(err).toBeInstanceOf(PlannerError);
      expect(err.cause).toBe(cause);
    }
    expect(new PlannerProtocolError('no cause').cause).toBeUndefined();
  });

  it('carry their context', () => {
    expect(new MissingApiKeyError('ANTHROPIC_API_KEY', 'anthropic')).toMatchObject({
      envVar: 'ANTHROPIC_API_KEY',
      provider: 'anthropic',
      message:
        'ANTHROPIC_API_KEY is not set: the anthropic planner reads its API key from the environment of the worker',
    });
    expect(new PlannerAuthError('m', 403).status).toBe(403);
    expect(new PlannerRequestError('m', null).status).toBeNull();
  });

  it('PriceTableError is one class, whether imported from errors or pricing', () => {
    expect(PriceTableErrorOfPricing).toBe(PriceTableError);
  });
});
