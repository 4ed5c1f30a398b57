/**
 * The one error root (common/errors.ts, issue 16 item 3): every error class the package
 * exports extends AgentLoopGuardError and carries a stable, non-empty snake_case `code`.
 * The table pins each class's code, so changing one is a visible, reviewed change
 * (docs/engineering-notes.md "Errors" lists them).
 */
import * as api from '../../index';
import * as clientApi from '../../client/api';
import * as workerApi from '../../worker/api';
import * as guardApi from '../../guard';
import { AgentLoopGuardError, isAgentLoopGuardError } from '../../common/errors';
import { OptionalDependencyError } from '../../common/optional-dep';
import {
  ApprovalError,
  ApprovalInputError,
  ApprovalStoreUnavailableError,
} from '../../storage/approvals/errors';
import {
  LedgerConflictError,
  LedgerConnectionError,
  LedgerError,
  LedgerStateError,
  StaleTokenError,
} from '../../storage/ledger/errors';
import {
  ContextExhaustedError,
  ContextLengthExceededError,
  EndpointConfigError,
  EndpointNotConfiguredError,
  InvalidPlannerSpecError,
  MissingApiKeyError,
  PlannerAuthError,
  PlannerProtocolError,
  PlannerRequestError,
  PlannerUnavailableError,
  PriceTableError,
  CostCeilingError,
  TokenCeilingError,
  SpendLimitError,
  UnpricedModelError,
} from '../../planners/errors';
import {
  SpendError,
  SpendInputError,
  SpendLimitsInvalidError,
  SpendStoreUnavailableError,
} from '../../storage/spend/errors';
import { ConversationStoreFault } from '../../storage/conversation-store';
import {
  PayloadCorruptError,
  PayloadInputError,
  PayloadNotFoundError,
  PayloadStoreError,
  PayloadStoreUnavailableError,
} from '../../storage/payloads/errors';
import { McpConfigError, McpToolsError, McpUnavailableError } from '../../tools/mcp/errors';
import { FatalToolError, PreconditionToolError, RetryableToolError, ToolError } from '../../tools/errors';
import { ProgressSourceError } from '../../activities/progress';
import { TelemetryConfigError, TelemetryError } from '../../worker/telemetry/errors';
import { SearchAttributesError } from '../../worker/search-attributes';
import { CliError, Exit } from '../../client/format';
import { GuardSequenceError } from '../../guard/loop-guard';
import { ReplayFormatError } from '../../guard/replay';
import { UnknownProfileError } from '../../guard/profiles';
import { CodecConfigError, CodecError, PayloadDecryptionError, UnknownKeyError } from '../../codec/errors';
import { PayloadCodecMismatchError } from '../../codec/mismatch';
import { NotAGuardedRunError } from '../../client/engine';

const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

type ErrorClass = abstract new (...args: never[]) => Error;

function errorClassesOf(barrel: Record<string, unknown>): [string, ErrorClass][] {
  return Object.entries(barrel).filter(
    (e): e is [string, ErrorClass] =>
      typeof e[1] === 'function' && e[1] !== AgentLoopGuardError && e[1].prototype instanceof Error,
  );
}

describe('the error root', () => {
  const barrels = {
    'agent-loop-guard': api,
    'agent-loop-guard/client': clientApi,
    'agent-loop-guard/worker': workerApi,
    'agent-loop-guard/guard': guardApi,
  };

  it('the barrels export error classes at all (the scan below is not vacuous)', () => {
    expect(errorClassesOf(api).length).toBeGreaterThanOrEqual(5);
    expect(errorClassesOf(workerApi).length).toBeGreaterThanOrEqual(5);
  });

  for (const [barrel, exports] of Object.entries(barrels)) {
    const classes = errorClassesOf(exports as Record<string, unknown>);
    if (classes.length === 0) continue;
    it.each(classes)(`${barrel}: %s extends AgentLoopGuardError`, (_name, cls) => {
      expect(cls.prototype).toBeInstanceOf(AgentLoopGuardError);
    });
  }

  const ledgerConflict = new LedgerConflictError({
    key: 'k',
    storedTool: 't',
    requestedTool: 't',
    storedArgsHash: 'a',
    requestedArgsHash: 'b',
  });
  const staleToken = new StaleTokenError({
    key: 'k',
    token: 1,
    currentToken: 2,
    currentState: 'CLAIMED',
    op: 'settle',
  });

  // Every product error class, constructed with minimal arguments, and its pinned code.
  const cases: [Error, string][] = [
    [new ApprovalError('m'), 'approval_error'],
    [new ApprovalInputError('m'), 'approval_invalid_input'],
    [new ApprovalStoreUnavailableError('m'), 'approval_store_unavailable'],
    [new LedgerError('m'), 'ledger_error'],
    [ledgerConflict, 'idempotency_conflict'],
    [staleToken, 'ledger_stale_token'],
    [new LedgerStateError('m', 'k', null), 'ledger_invalid_state'],
    [new LedgerConnectionError('m', 'sqlite://x'), 'ledger_unavailable'],
    [new MissingApiKeyError('OPENAI_API_KEY', 'openai'), 'planner_api_key_missing'],
    [new PlannerAuthError('m', 401), 'planner_auth_failed'],
    [new PlannerRequestError('m', 400), 'planner_request_rejected'],
    [new PlannerUnavailableError('m', 503, null), 'planner_unavailable'],
    [new PlannerProtocolError('m'), 'planner_protocol_error'],
    [new PriceTableError('m'), 'price_table_invalid'],
    [new EndpointNotConfiguredError('m', 'e', []), 'model_endpoint_not_configured'],
    [new EndpointConfigError('m'), 'model_endpoint_config_invalid'],
    [new InvalidPlannerSpecError('m'), 'planner_spec_invalid'],
    [new ContextLengthExceededError('m'), 'context_length_exceeded'],
    [new ContextExhaustedError('m'), 'context_exhausted'],
    [new CostCeilingError('m'), 'cost_ceiling'],
    [new TokenCeilingError('m'), 'token_ceiling'],
    [new SpendLimitError('m'), 'spend_limit'],
    [new UnpricedModelError('m'), 'spend_limit_unpriced_model'],
    [new SpendError('m'), 'spend_error'],
    [new SpendLimitsInvalidError('m'), 'spend_limits_invalid'],
    [new SpendInputError('m'), 'spend_invalid_input'],
    [new SpendStoreUnavailableError('m'), 'spend_store_unavailable'],
    [new ConversationStoreFault('m'), 'conversation_store_failed'],
    [new PayloadStoreError('m'), 'payload_store_error'],
    [new PayloadNotFoundError('r', 'i'), 'payload_not_found'],
    [new PayloadCorruptError('r', 'i'), 'payload_corrupt'],
    [new PayloadStoreUnavailableError('m'), 'payload_store_unavailable'],
    [new PayloadInputError('m'), 'payload_invalid_input'],
    [new McpToolsError('m'), 'mcp_error'],
    [new McpConfigError('m', null), 'mcp_config_invalid'],
    [new McpUnavailableError('m', 's', false), 'mcp_unavailable'],
    [new ProgressSourceError('s', 'm'), 'progress_source_failed'],
    [new OptionalDependencyError('pg', 'f', 'npm i pg'), 'optional_dependency_missing'],
    [new TelemetryError('m'), 'telemetry_error'],
    [new TelemetryConfigError('OTEL_X', 'm'), 'telemetry_config_invalid'],
    [new SearchAttributesError('m', 'default', [], []), 'search_attributes_missing'],
    [new CliError(Exit.USAGE, 'm'), 'cli_error'],
    [new GuardSequenceError('m'), 'guard_sequence_violation'],
    [new ReplayFormatError('m', 'f'), 'replay_format_invalid'],
    [new UnknownProfileError('x'), 'unknown_profile'],
    [new CodecError('m'), 'codec_error'],
    [new CodecConfigError('m'), 'codec_config_invalid'],
    [new UnknownKeyError('k1', []), 'codec_unknown_key'],
    [new PayloadDecryptionError('k1'), 'payload_decryption_failed'],
    [new PayloadCodecMismatchError('worker', 'd', 'm'), 'payload_codec_mismatch'],
    [new NotAGuardedRunError('wf', 'someWorkflow', 'nothing was sent'), 'not_a_guarded_run'],
    // A tool error's code is the result code the tool gives (defaults shown).
    [new RetryableToolError('m'), 'transient'],
    [new PreconditionToolError('m'), 'precondition_failed'],
    [new FatalToolError('m'), 'fatal'],
    [new ToolError('m', 'my_code'), 'my_code'],
  ];

  it.each(cases.map(([err, code]) => [err.name, code, err] as const))(
    '%s: code %s, under the root, named after its class',
    (_name, code, err) => {
      expect(err).toBeInstanceOf(AgentLoopGuardError);
      expect(isAgentLoopGuardError(err)).toBe(true);
      const actual = (err as AgentLoopGuardError).code;
      expect(actual).toBe(code);
      expect(actual).toMatch(SNAKE);
      expect(err.name).toBe(err.constructor.name);
    },
  );

  it('product codes are distinct (tool errors carry result codes and are left out)', () => {
    const codes = cases.filter(([e]) => !(e instanceof ToolError)).map(([, c]) => c);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('every barrel-exported error class is in the code table', () => {
    const tabled = new Set(cases.map(([e]) => e.constructor.name));
    const exported = Object.values(barrels)
      .flatMap((b) => errorClassesOf(b as Record<string, unknown>))
      .map(([n]) => n);
    expect(exported.filter((n) => !tabled.has(n))).toEqual([]);
  });

  it('the root and its guard are exported from the package barrel', () => {
    expect(api.AgentLoopGuardError).toBe(AgentLoopGuardError);
    expect(api.isAgentLoopGuardError).toBe(isAgentLoopGuardError);
  });

  it('keeps the existing public fields beside code', () => {
    expect(new CliError(Exit.REFUSED, 'm').exitCode).toBe(Exit.REFUSED);
    expect(ledgerConflict.key).toBe('k');
    expect(new PlannerUnavailableError('m', 503, null).retryable).toBe(true);
    expect(isAgentLoopGuardError(new Error('plain'))).toBe(false);
  });
});
