/**
 * What a worker and a client share to reach Temporal and the worker's database: the Temporal
 * connection (`@temporalio/envconfig`: TEMPORAL_* variables over a TOML profile) and the
 * run settings (task queue, ledger, the demo's world), with their defaults. worker/env.ts
 * lists every variable the worker reads and re-exports these; client/ reads them here.
 */
import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';
import { z } from 'zod';
import { DEFAULT_TASK_QUEUE } from '../common/contracts';
import { DEFAULT_LEDGER_URL } from '../storage/ledger/open-ledger';

/** Default Temporal frontend (the local dev server, `npm run dev:server`). */
export const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';
export const DEFAULT_NAMESPACE = 'default';
/** Default task queue shared by every worker replica and the client. */
export { DEFAULT_TASK_QUEUE };
/** Default ledger: embedded SQLite (one host). Use `postgres://…` for several workers/hosts. */
export { DEFAULT_LEDGER_URL };
/** Default demo world (SQLite file the demo tools act on). */
export const DEFAULT_WORLD_URL = 'sqlite:data/agent.db';

/** Empty strings (e.g. compose's `${VAR:-}`) mean "unset". */
const optional = (schema: z.ZodString) =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), schema.optional());

const workerEnvSchema = z.object({
  TEMPORAL_ADDRESS: optional(z.string().regex(/^.+:\d+$/, 'TEMPORAL_ADDRESS must be host:port')),
  TEMPORAL_NAMESPACE: optional(z.string().min(1)),
  TEMPORAL_TASK_QUEUE: optional(z.string().min(1)),
  LEDGER_URL: optional(
    z
      .string()
      .regex(
        /^(sqlite:|postgres:\/\/|postgresql:\/\/)/,
        'LEDGER_URL must start with sqlite:, postgres:// or postgresql://',
      ),
  ),
  WORLD_URL: optional(z.string().min(1)),
});

/** The application settings of a worker, with defaults applied. */
export interface WorkerEnv {
  readonly temporalAddress: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly ledgerUrl: string;
  readonly worldUrl: string;
}

/**
 * Read and validate the worker's settings. Throws an Error naming every invalid variable.
 * TLS/API-key settings are not here: see {@link loadConnectionOptions}.
 */
export function readWorkerEnv(env: NodeJS.ProcessEnv = process.env): WorkerEnv {
  const parsed = workerEnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid worker environment: ${problems}`);
  }
  const e = parsed.data;
  return {
    temporalAddress: e.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS,
    namespace: e.TEMPORAL_NAMESPACE ?? DEFAULT_NAMESPACE,
    taskQueue: e.TEMPORAL_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    ledgerUrl: e.LEDGER_URL ?? DEFAULT_LEDGER_URL,
    // The demo world defaults to the ledger's SQLite file, so its writes commit atomically
    // with the ledger record; with a PostgreSQL ledger it gets a file of its own.
    worldUrl:
      e.WORLD_URL ??
      (e.LEDGER_URL === undefined || e.LEDGER_URL.startsWith('sqlite:')
        ? (e.LEDGER_URL ?? DEFAULT_WORLD_URL)
        : 'sqlite:data/world.db'),
  };
}

/** What `NativeConnection.connect` / `Connection.connect` need, plus the namespace. */
export interface ConnectionSettings {
  readonly connectionOptions: ClientConnectConfig['connectionOptions'] & { address: string };
  readonly namespace: string;
}

/**
 * Temporal connection options via `@temporalio/envconfig` (TOML profile + TEMPORAL_* env
 * overrides: API key, mTLS, gRPC metadata), falling back to TEMPORAL_ADDRESS /
 * localhost:7233 and namespace `default` when nothing is configured.
 *
 * @example
 *   const { connectionOptions, namespace } = loadConnectionOptions();
 *   const connection = await NativeConnection.connect(connectionOptions);
 */
export function loadConnectionOptions(env: NodeJS.ProcessEnv = process.env): ConnectionSettings {
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') vars[k] = v;
  const app = readWorkerEnv(env);
  const cfg = loadClientConnectConfig({ overrideEnvVars: vars });
  const connectionOptions = {
    ...cfg.connectionOptions,
    address: cfg.connectionOptions.address ?? app.temporalAddress,
  };
  // Drop undefined keys so spreading into Connection options doesn't override SDK defaults.
  for (const key of Object.keys(connectionOptions) as (keyof typeof connectionOptions)[]) {
    if (connectionOptions[key] === undefined) delete connectionOptions[key];
  }
  return { connectionOptions, namespace: cfg.namespace ?? app.namespace };
}
