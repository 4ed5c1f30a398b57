/**
 * The worker's environment: the ONE list of variable names the worker reads, their
 * defaults, and how the Temporal connection is derived from them.
 *
 * docker-compose.yml's `worker` service may only set names listed in WORKER_ENV_VARS
 * (checked by test/deploy/compose.test.ts), so a typo there fails CI instead of being
 * silently ignored in production.
 *
 * The connection and run settings a client shares live in connection/env.ts (re-exported
 * here). Temporal connection settings (address, namespace, API key, mTLS) are read by
 * `@temporalio/envconfig`, the SDK's standard loader: TEMPORAL_* env vars override a
 * profile from the TOML config file (TEMPORAL_CONFIG_FILE, default
 * `~/.config/temporalio/temporal.toml`, profile TEMPORAL_PROFILE or `default`). The same
 * variables work for the `temporal` CLI, so one `.env` configures both.
 */
import type { WorkerOptions } from '@temporalio/worker';
import { CODEC_ENV_DOCS } from '../codec/load-codec';
import type { SearchAttributesMode } from './search-attributes';
import { OTEL_ENV_DOCS } from './telemetry/config';

import {
  readWorkerEnv as readConnectionEnv,
  type WorkerEnv,
  DEFAULT_LEDGER_URL,
  DEFAULT_NAMESPACE,
  DEFAULT_TASK_QUEUE,
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_WORLD_URL,
} from '../connection/env';

export {
  DEFAULT_LEDGER_URL,
  DEFAULT_NAMESPACE,
  DEFAULT_TASK_QUEUE,
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_WORLD_URL,
  loadConnectionOptions,
  type ConnectionSettings,
  type WorkerEnv,
} from '../connection/env';

/**
 * The worker's settings (connection/env.ts `readWorkerEnv`), with the worker's own variables
 * checked too: one error names every invalid variable, AGENT_REGISTER_SEARCH_ATTRIBUTES included.
 */
export function readWorkerEnv(env: NodeJS.ProcessEnv = process.env): WorkerEnv {
  const sa = env.AGENT_REGISTER_SEARCH_ATTRIBUTES?.trim();
  const saProblem =
    sa && parseSearchAttributesMode(sa) === undefined
      ? `AGENT_REGISTER_SEARCH_ATTRIBUTES: ${SEARCH_ATTRIBUTES_MODE_HINT}`
      : null;
  let read: WorkerEnv;
  try {
    read = readConnectionEnv(env);
  } catch (err) {
    throw saProblem ? new Error(`${(err as Error).message}; ${saProblem}`) : err;
  }
  if (saProblem) throw new Error(`Invalid worker environment: ${saProblem}`);
  return read;
}

/** How long a worker waits for Temporal at start by default, s. */
export const DEFAULT_TEMPORAL_WAIT_S = 120;

/** The environment variable of that wait. */
export const TEMPORAL_WAIT_ENV = 'AGENT_TEMPORAL_WAIT';

/** AGENT_TEMPORAL_WAIT as ms: whole seconds >= 0; anything else throws naming the variable. */
export function readTemporalWaitMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[TEMPORAL_WAIT_ENV]?.trim();
  if (raw === undefined || raw === '') return DEFAULT_TEMPORAL_WAIT_S * 1000;
  if (!/^\d+$/.test(raw))
    throw new Error(
      `${TEMPORAL_WAIT_ENV}=${raw}: expected whole seconds >= 0 (how long a worker waits for Temporal at start; 0: no wait)`,
    );
  return Number(raw) * 1000;
}

/** Every environment variable the worker reads, with what it means. */
export const WORKER_ENV_DOCS = {
  // ── Temporal connection (read by @temporalio/envconfig; same names as the `temporal` CLI) ──
  TEMPORAL_ADDRESS: `Temporal frontend host:port (default ${DEFAULT_TEMPORAL_ADDRESS}; Temporal Cloud: <ns>.<acct>.tmprl.cloud:7233 or <region>.<cloud>.api.temporal.io:7233).`,
  TEMPORAL_NAMESPACE: `Temporal namespace (default ${DEFAULT_NAMESPACE}).`,
  TEMPORAL_API_KEY: 'API key (Temporal Cloud); turns TLS on.',
  TEMPORAL_TLS: 'true/false: force TLS on/off.',
  TEMPORAL_TLS_CLIENT_CERT_PATH: 'mTLS client certificate (PEM file).',
  TEMPORAL_TLS_CLIENT_CERT_DATA: 'mTLS client certificate (PEM contents).',
  TEMPORAL_TLS_CLIENT_KEY_PATH: 'mTLS client private key (PEM file).',
  TEMPORAL_TLS_CLIENT_KEY_DATA: 'mTLS client private key (PEM contents).',
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: 'CA bundle for the server certificate (PEM file), self-hosted TLS.',
  TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'CA bundle for the server certificate (PEM contents).',
  TEMPORAL_TLS_SERVER_NAME: 'SNI / expected server name override.',
  TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true: skip host name verification (testing only).',
  TEMPORAL_PROFILE: 'Profile name in the envconfig TOML file (default "default").',
  TEMPORAL_CONFIG_FILE: 'Path of the envconfig TOML file (default ~/.config/temporalio/temporal.toml).',
  // ── This application ──
  AGENT_TEMPORAL_WAIT: `How long a worker waits for Temporal at start, in seconds (default ${DEFAULT_TEMPORAL_WAIT_S}; 0: one try): a server started at the same time is retried with backoff, the wait said once (worker/connect-temporal.ts).`,
  TEMPORAL_TASK_QUEUE: `Task queue the worker polls (default ${DEFAULT_TASK_QUEUE}); all replicas share it.`,
  LEDGER_URL: `Completed-operation ledger: sqlite:<file> (one host) or postgres://… (several workers/hosts). Default ${DEFAULT_LEDGER_URL}.`,
  WORLD_URL: `Demo world SQLite file (default ${DEFAULT_WORLD_URL}).`,
  ANTHROPIC_API_KEY: 'Anthropic API key for the LLM planner (optional; passthrough).',
  OPENAI_API_KEY: 'OpenAI API key for the LLM planner (optional; passthrough).',
  // ── Worker tuning (readWorkerTuning; unset = the SDK default; docs/performance.md) ──
  AGENT_MAX_CACHED_WORKFLOWS:
    'Runs kept in the workflow cache (sticky execution; integer >= 0, 0 replays every task from history; SDK default: from the heap size).',
  AGENT_MAX_CONCURRENT_WORKFLOW_TASKS: 'Workflow tasks executed at once (integer >= 2; SDK default 40).',
  AGENT_MAX_CONCURRENT_ACTIVITIES:
    'Activity tasks (planner turns, tool calls) executed at once (integer >= 1; SDK default 100).',
  AGENT_WORKFLOW_TASK_POLLERS:
    'Workflow task pollers: N (at most N polls open) or auto / auto:MIN:MAX:INITIAL (autoscaling); SDK default at most 10.',
  AGENT_ACTIVITY_TASK_POLLERS:
    'Activity task pollers: N or auto / auto:MIN:MAX:INITIAL, as AGENT_WORKFLOW_TASK_POLLERS; SDK default at most 10.',
  AGENT_STICKY_SCHEDULE_TO_START_MS:
    'How long a task waits on this worker’s sticky queue before any worker may take it (ms, integer >= 1; SDK default 10000).',
  AGENT_CONFIG: `MCP servers config file (docs/mcp.md; default ./agent.config.json when it exists, else no MCP tools). A malformed file or a server down at start stops the worker.`,
  AGENT_REGISTER_SEARCH_ATTRIBUTES:
    'true (default): at start, register missing search attributes (AgentState, AgentGuardReason, AgentSteps, AgentRootRun) in the namespace; false: only check, and exit with the `temporal operator search-attribute create` commands when some are missing; skip: no check (the credentials may not even list them).',
  AGENT_REAPER:
    'on (default): at start, create or update the ledger reaper Temporal Schedule (agent-loop-guard-ledger-reaper); off: leave it alone (worker/reaper-schedule.ts).',
  AGENT_LEDGER_RETENTION_MS:
    'Settled ledger records older than this are reaped once their run is closed (default 2592000000 = 30 days; a value below the 7-day resume window is raised to it with a warning).',
  AGENT_MODEL_ENDPOINTS:
    'Named model endpoints a run may pick by name (JSON {"name": {"provider": "openai"|"anthropic"|"openai-compatible", "baseURL", "apiKeyEnv"?}}); a run can never give a URL (docs/planners.md).',
  AGENT_MODEL_ENDPOINTS_FILE: 'The same as AGENT_MODEL_ENDPOINTS, from a JSON file.',
  ANTHROPIC_BASE_URL: 'Base URL of the built-in `anthropic` endpoint (default the official API).',
  OPENAI_BASE_URL: 'Base URL of the built-in `openai` endpoint (default the official API).',
  AGENT_OPERATORS_FILE:
    'Operators file (JSON: operators with Ed25519 public keys and roles; roles say which stops they may lift, which budgets they may raise how far, stop, approve). Unset: open mode, every resume/stop accepted unverified (docs/security.md).',
  AGENT_CHECKPOINT_KEY:
    'Checkpoint seal key (base64, >= 32 bytes), the same on every worker of a fleet; unset: a key file made on first use (AGENT_CHECKPOINT_KEY_FILE).',
  AGENT_CHECKPOINT_KEY_FILE:
    'Where the checkpoint seal key file lives (default: ./data/checkpoint.key if it exists, else $XDG_CONFIG_HOME/agent-loop-guard/checkpoint.key, i.e. ~/.config/agent-loop-guard/checkpoint.key).',
  AGENT_APPROVAL_POLICY:
    'Which calls need a person\'s approval besides tools marked requiresApproval: tool names "a,b", or JSON {"minRisk":"write"|"destructive","tools":[…]} (docs/security.md "Approvals"). Unset: only the tools\' own.',
  AGENT_REAPER_INTERVAL: 'Time between reaper passes: ms, or 90s / 15m / 1h / 1d (default 1h, at least 10s).',
  AGENT_PAYLOAD_REF_BYTES:
    "A tool result whose data JSON is above this many bytes is kept in the payload store (the ledger's database) and the workflow gets a reference (default 65536; 1024 to 1500000). Reaped with the run.",
  // ── OpenTelemetry (standard OTEL_* names; worker/telemetry/config.ts; off when none is set) ──
  ...OTEL_ENV_DOCS,
  // ── Payload encryption (codec/load-codec.ts; docs/security.md) ──
  ...CODEC_ENV_DOCS,
} as const;

export type WorkerEnvVar = keyof typeof WORKER_ENV_DOCS;

/** The names of every environment variable the worker reads. */
export const WORKER_ENV_VARS = Object.keys(WORKER_ENV_DOCS) as readonly WorkerEnvVar[];

/** AGENT_REGISTER_SEARCH_ATTRIBUTES values → what the worker does at start. */
const SEARCH_ATTRIBUTES_MODES: Readonly<Record<string, SearchAttributesMode>> = {
  true: 'register',
  '1': 'register',
  yes: 'register',
  on: 'register',
  false: 'check',
  '0': 'check',
  no: 'check',
  off: 'check',
  skip: 'skip',
};
const SEARCH_ATTRIBUTES_MODE_HINT = 'must be true (register, the default), false (check only) or skip';

function parseSearchAttributesMode(v: string): SearchAttributesMode | undefined {
  const key = v.trim().toLowerCase();
  return Object.hasOwn(SEARCH_ATTRIBUTES_MODES, key) ? SEARCH_ATTRIBUTES_MODES[key] : undefined;
}

/**
 * What the worker does about the namespace's search attributes at start, from
 * AGENT_REGISTER_SEARCH_ATTRIBUTES: `register` (unset, `true`), `check` (`false`) or `skip`.
 * Throws on any other value. (Kept out of {@link WorkerEnv} so that object stays the
 * connection/storage settings the client shares.)
 */
export function readSearchAttributesMode(env: NodeJS.ProcessEnv = process.env): SearchAttributesMode {
  const raw = env.AGENT_REGISTER_SEARCH_ATTRIBUTES;
  if (raw === undefined || raw.trim() === '') return 'register';
  const mode = parseSearchAttributesMode(raw);
  if (!mode)
    throw new Error(
      `Invalid worker environment: AGENT_REGISTER_SEARCH_ATTRIBUTES: ${SEARCH_ATTRIBUTES_MODE_HINT}`,
    );
  return mode;
}

/**
 * The Temporal worker options an operator may tune from the environment (the
 * AGENT_MAX_* / AGENT_*_POLLERS / AGENT_STICKY_* variables); unset keys keep the SDK's default.
 */
export type WorkerTuning = Partial<
  Pick<
    WorkerOptions,
    | 'maxCachedWorkflows'
    | 'maxConcurrentWorkflowTaskExecutions'
    | 'maxConcurrentActivityTaskExecutions'
    | 'workflowTaskPollerBehavior'
    | 'activityTaskPollerBehavior'
    | 'stickyQueueScheduleToStartTimeout'
  >
>;

/** One tuning variable: its name, the option it sets, and how its text becomes the value. */
const TUNING_VARS: ReadonlyArray<{
  readonly name: WorkerEnvVar;
  readonly option: keyof WorkerTuning;
  readonly parse: (raw: string) => WorkerTuning[keyof WorkerTuning];
}> = [
  { name: 'AGENT_MAX_CACHED_WORKFLOWS', option: 'maxCachedWorkflows', parse: (v) => intAtLeast(v, 0) },
  {
    name: 'AGENT_MAX_CONCURRENT_WORKFLOW_TASKS',
    option: 'maxConcurrentWorkflowTaskExecutions',
    // The SDK needs two slots when the cache is on (one for the sticky, one for the normal queue).
    parse: (v) => intAtLeast(v, 2),
  },
  {
    name: 'AGENT_MAX_CONCURRENT_ACTIVITIES',
    option: 'maxConcurrentActivityTaskExecutions',
    parse: (v) => intAtLeast(v, 1),
  },
  { name: 'AGENT_WORKFLOW_TASK_POLLERS', option: 'workflowTaskPollerBehavior', parse: (v) => pollers(v) },
  { name: 'AGENT_ACTIVITY_TASK_POLLERS', option: 'activityTaskPollerBehavior', parse: (v) => pollers(v) },
  {
    name: 'AGENT_STICKY_SCHEDULE_TO_START_MS',
    option: 'stickyQueueScheduleToStartTimeout',
    parse: (v) => intAtLeast(v, 1),
  },
];

function intAtLeast(raw: string, min: number): number {
  const n = Number(raw.trim());
  if (!Number.isInteger(n) || n < min) throw new Error(`must be an integer >= ${min}, got "${raw}"`);
  return n;
}

/** How a worker polls one kind of task (not exported by the SDK's index). */
type PollerBehavior = NonNullable<WorkerOptions['workflowTaskPollerBehavior']>;

/** `N` → at most N polls open; `auto` or `auto:MIN:MAX:INITIAL` → the SDK's autoscaling poller. */
function pollers(raw: string): PollerBehavior {
  const v = raw.trim().toLowerCase();
  if (v === 'auto') return { type: 'autoscaling' };
  if (v.startsWith('auto:')) {
    const parts = v.slice('auto:'.length).split(':');
    if (parts.length !== 3) throw new Error(`must be auto or auto:MIN:MAX:INITIAL, got "${raw}"`);
    const [minimum, maximum, initial] = parts.map((p) => intAtLeast(p, 1)) as [number, number, number];
    if (!(minimum <= initial && initial <= maximum)) {
      throw new Error(`auto:MIN:MAX:INITIAL needs MIN <= INITIAL <= MAX, got "${raw}"`);
    }
    return { type: 'autoscaling', minimum, maximum, initial };
  }
  return { type: 'simple-maximum', maximum: intAtLeast(v, 1) };
}

/**
 * The worker tuning from the environment. Throws an Error naming every invalid variable;
 * empty values mean unset (compose's `${VAR:-}`).
 */
export function readWorkerTuning(env: NodeJS.ProcessEnv = process.env): WorkerTuning {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const t of TUNING_VARS) {
    const raw = env[t.name];
    if (raw === undefined || raw.trim() === '') continue;
    try {
      out[t.option] = t.parse(raw);
    } catch (err) {
      problems.push(`${t.name}: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) throw new Error(`Invalid worker environment: ${problems.join('; ')}`);
  return out as WorkerTuning;
}
