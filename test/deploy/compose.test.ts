/**
 * docker-compose.yml can't be run here (no Docker engine), so it is checked statically:
 * the services exist, the worker only sets variables the worker actually reads
 * (worker/env.ts), ports follow the dev-server conventions, the search attributes
 * registered by the setup job are exactly common/search-attributes.ts, and the production
 * topology is closed (issue #10): the frontend speaks mTLS with the certificates
 * scripts/make-certs.ts makes, every Temporal client presents one, and nothing is published
 * on all interfaces without TLS and client auth.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { DEFAULT_SERVER_NAMES } from '../../scripts/make-certs';
import {
  DEFAULT_TASK_QUEUE,
  DEFAULT_TEMPORAL_ADDRESS,
  readWorkerEnv,
  WORKER_ENV_VARS,
} from '../../worker/env';

const root = path.resolve(__dirname, '../..');

interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: (string | number | { target: number; published?: string | number })[];
  volumes?: (string | { source?: string; target: string })[];
  command?: string | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
}

const compose = parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};

function service(name: string): Service {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service '${name}'`);
  return s;
}

function envOf(s: Service): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(s.environment)) {
    for (const entry of s.environment) {
      const i = entry.indexOf('=');
      out[i < 0 ? entry : entry.slice(0, i)] = i < 0 ? '' : entry.slice(i + 1);
    }
  } else {
    for (const [k, v] of Object.entries(s.environment ?? {})) out[k] = v === null ? '' : String(v);
  }
  return out;
}

/** `${VAR:-default}` / `${VAR}` as compose would interpolate with VAR unset. */
const interpolateUnset = (v: string) =>
  v.replace(/\$\{[A-Z0-9_]+(?::?-([^}]*))?\}/g, (_m, def: string | undefined) => def ?? '');

/** [published, target] pairs of a service's port mappings. */
function ports(s: Service): [number, number][] {
  return (s.ports ?? []).map((p) => {
    if (typeof p === 'object') return [Number(p.published ?? p.target), p.target];
    const parts = String(p).split(':');
    const target = Number(parts[parts.length - 1]);
    const published = parts.length > 1 ? Number(parts[parts.length - 2]) : target;
    return [published, target];
  });
}

/** A port mapping's host address: '' (all interfaces) unless it is written `IP:published:target`. */
function hostIps(s: Service): string[] {
  return (s.ports ?? []).map((p) => {
    if (typeof p === 'object') return (p as { host_ip?: string }).host_ip ?? '';
    const parts = String(p).split(':');
    return parts.length > 2 ? parts.slice(0, parts.length - 2).join(':') : '';
  });
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '[::1]', 'localhost']);
/** The certificate directory scripts/make-certs.ts writes, as the compose services mount it. */
function certsMount(s: Service): string | undefined {
  const mount = (s.volumes ?? [])
    .map((v) => (typeof v === 'string' ? v.split(':') : [v.source ?? '', v.target]))
    .find(([source]) => source === './deploy/certs');
  return mount?.[1];
}

const commandText = (s: Service) => (Array.isArray(s.command) ? s.command.join('\n') : (s.command ?? ''));
const dependsOn = (s: Service) =>
  Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});

describe('docker-compose.yml', () => {
  it('has the expected services', () => {
    for (const name of ['postgresql', 'temporal', 'temporal-ui', 'ledger-db', 'worker', 'temporal-setup']) {
      expect(compose.services).toHaveProperty([name]);
    }
  });

  it('every service dependency exists', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      for (const dep of dependsOn(s))
        expect({ name, dep, exists: dep in compose.services }).toEqual({ name, dep, exists: true });
    }
  });

  it('worker environment keys are a subset of WORKER_ENV_VARS and include the essentials', () => {
    const keys = Object.keys(envOf(service('worker')));
    const unknown = keys.filter((k) => !(WORKER_ENV_VARS as readonly string[]).includes(k));
    expect(unknown).toEqual([]);
    for (const required of [
      'TEMPORAL_ADDRESS',
      'TEMPORAL_NAMESPACE',
      'TEMPORAL_TASK_QUEUE',
      'LEDGER_URL',
      'WORLD_URL',
      'ANTHROPIC_API_KEY',
      'OPENAI_API_KEY',
    ]) {
      expect(keys).toContain(required);
    }
  });

  it('worker environment is valid for readWorkerEnv and points at the compose services', () => {
    const raw = envOf(service('worker'));
    const env = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, interpolateUnset(v)]));
    const cfg = readWorkerEnv(env);
    expect(cfg.taskQueue).toBe(DEFAULT_TASK_QUEUE);
    expect(cfg.namespace).toBe('default');
    expect(cfg.temporalAddress).toBe(`temporal:${new URL(`grpc://${DEFAULT_TEMPORAL_ADDRESS}`).port}`);
    const ledger = new URL(cfg.ledgerUrl);
    expect(ledger.protocol).toMatch(/^postgres(ql)?:$/);
    expect(compose.services).toHaveProperty([ledger.hostname]);
    // API keys are passthrough from the host environment, never baked in.
    expect(raw.ANTHROPIC_API_KEY).toMatch(/^\$\{ANTHROPIC_API_KEY(:-)?\}$/);
    expect(raw.OPENAI_API_KEY).toMatch(/^\$\{OPENAI_API_KEY(:-)?\}$/);
  });

  it('ports follow the dev-server conventions (frontend 7233, UI = port + 1000)', () => {
    const grpcPort = Number(new URL(`grpc://${DEFAULT_TEMPORAL_ADDRESS}`).port);
    expect(ports(service('temporal'))).toContainEqual([grpcPort, 7233]);
    expect(ports(service('temporal-ui'))).toContainEqual([grpcPort + 1000, 8080]);
    expect(envOf(service('temporal-ui')).TEMPORAL_ADDRESS).toBe(envOf(service('worker')).TEMPORAL_ADDRESS);
  });

  it('Temporal uses PostgreSQL (postgres12 plugin) with a mounted dynamic config', () => {
    const env = envOf(service('temporal'));
    expect(env.DB).toBe('postgres12');
    expect(env.POSTGRES_SEEDS).toBe('postgresql');
    const dyn = env.DYNAMIC_CONFIG_FILE_PATH;
    expect(dyn).toBeTruthy();
    const mount = (service('temporal').volumes ?? [])
      .map((v) => (typeof v === 'string' ? v.split(':') : [v.source ?? '', v.target]))
      .find(([, target]) => target === '/etc/temporal/config/dynamicconfig');
    expect(mount).toBeDefined();
    const hostFile = path.join(root, mount![0]!, path.basename(dyn!));
    expect(fs.existsSync(hostFile)).toBe(true);
  });

  it('registers exactly the search attributes of common/search-attributes.ts', () => {
    const cmd = commandText(service('temporal-setup'));
    const registered: Record<string, string> = {};
    for (const m of cmd.matchAll(/search-attribute create\b[^\n]*?--name\s+(\w+)\s+--type\s+(\w+)/g)) {
      registered[m[1]!] = m[2]!;
    }
    expect(registered).toEqual({ ...SEARCH_ATTRIBUTES });
  });

  it('builds the worker from the Dockerfile, which runs `npm run worker` on node:22-bookworm-slim', () => {
    const build = service('worker').build;
    const dockerfile = typeof build === 'string' ? 'Dockerfile' : (build?.dockerfile ?? 'Dockerfile');
    expect(build).toBeDefined();
    const text = fs.readFileSync(path.join(root, dockerfile), 'utf8');
    expect(text).toMatch(/^FROM node:22-bookworm-slim/m);
    expect(text).toMatch(/npm ci/);
    expect(text).toMatch(/CMD \["npm", "run", "worker"\]/);
    expect(fs.existsSync(path.join(root, '.dockerignore'))).toBe(true);
  });

  it('named volumes used by services are declared', () => {
    for (const s of Object.values(compose.services)) {
      for (const v of s.volumes ?? []) {
        const src = typeof v === 'string' ? v.split(':')[0]! : (v.source ?? '');
        if (src && !src.startsWith('.') && !src.startsWith('/'))
          expect(compose.volumes ?? {}).toHaveProperty([src]);
      }
    }
  });
});

describe('docker-compose.yml: production topology (mTLS, nothing open unauthenticated)', () => {
  const frontend = envOf(service('temporal'));
  /** A service is authenticated when it demands a client certificate signed by our CA. */
  const requiresClientCert = (env: Record<string, string>) =>
    env.TEMPORAL_TLS_REQUIRE_CLIENT_AUTH === 'true' &&
    Boolean(
      env.TEMPORAL_TLS_FRONTEND_CERT && env.TEMPORAL_TLS_FRONTEND_KEY && env.TEMPORAL_TLS_CLIENT1_CA_CERT,
    );

  it('publishes no port on all interfaces unless the service requires TLS client certificates', () => {
    const open: string[] = [];
    for (const [name, s] of Object.entries(compose.services)) {
      const allInterfaces = hostIps(s).some((ip) => !LOOPBACK.has(ip));
      if (allInterfaces && !requiresClientCert(envOf(s))) open.push(name);
    }
    expect(open).toEqual([]);
    // The UI has no login of its own: loopback only.
    expect(hostIps(service('temporal-ui')).every((ip) => LOOPBACK.has(ip))).toBe(true);
  });

  it('the frontend has mTLS configured with the files scripts/make-certs.ts writes', () => {
    expect(requiresClientCert(frontend)).toBe(true);
    const dir = certsMount(service('temporal'));
    expect(dir).toBeDefined();
    expect(frontend).toMatchObject({
      TEMPORAL_TLS_FRONTEND_CERT: `${dir}/server.pem`,
      TEMPORAL_TLS_FRONTEND_KEY: `${dir}/server.key`,
      TEMPORAL_TLS_CLIENT1_CA_CERT: `${dir}/ca.pem`,
      TEMPORAL_TLS_SERVER_CERT: `${dir}/server.pem`,
      TEMPORAL_TLS_SERVER_KEY: `${dir}/server.key`,
      TEMPORAL_TLS_FRONTEND_DISABLE_HOST_VERIFICATION: 'false',
    });
    // The name clients verify is one the server certificate is made for.
    expect(DEFAULT_SERVER_NAMES).toContain(frontend.TEMPORAL_TLS_FRONTEND_SERVER_NAME);
    expect(new URL(`grpc://${envOf(service('worker')).TEMPORAL_ADDRESS}`).hostname).toBe(
      DEFAULT_SERVER_NAMES[0],
    );
  });

  it('every Temporal client (worker, setup job) connects with the TLS_* variables of worker/env.ts', () => {
    for (const name of ['worker', 'temporal-setup']) {
      const env = envOf(service(name));
      const dir = certsMount(service(name));
      expect({ name, dir: dir !== undefined }).toEqual({ name, dir: true });
      expect(env).toMatchObject({
        TEMPORAL_TLS_CLIENT_CERT_PATH: `${dir}/client.pem`,
        TEMPORAL_TLS_CLIENT_KEY_PATH: `${dir}/client.key`,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: `${dir}/ca.pem`,
        TEMPORAL_TLS_SERVER_NAME: frontend.TEMPORAL_TLS_FRONTEND_SERVER_NAME,
      });
      expect(env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION ?? 'false').toBe('false');
    }
    for (const v of [
      'TEMPORAL_TLS_CLIENT_CERT_PATH',
      'TEMPORAL_TLS_CLIENT_KEY_PATH',
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    ]) {
      expect(WORKER_ENV_VARS).toContain(v);
    }
    const ui = envOf(service('temporal-ui'));
    const uiDir = certsMount(service('temporal-ui'));
    expect(ui).toMatchObject({
      TEMPORAL_TLS_CA: `${uiDir}/ca.pem`,
      TEMPORAL_TLS_CERT: `${uiDir}/client.pem`,
      TEMPORAL_TLS_KEY: `${uiDir}/client.key`,
      TEMPORAL_TLS_ENABLE_HOST_VERIFICATION: 'true',
    });
  });
});

describe('worker/env.ts', () => {
  it('applies defaults', () => {
    expect(readWorkerEnv({})).toEqual({
      temporalAddress: 'localhost:7233',
      namespace: 'default',
      taskQueue: 'agent-loop-guard',
      ledgerUrl: 'sqlite:data/agent.db',
      // The demo world shares the ledger's SQLite file, so its writes commit with the ledger record.
      worldUrl: 'sqlite:data/agent.db',
    });
    expect(readWorkerEnv({ LEDGER_URL: 'postgres://l@h:5432/db' }).worldUrl).toBe('sqlite:data/world.db');
  });

  it('treats empty strings as unset and rejects a bad address or ledger URL', () => {
    expect(readWorkerEnv({ TEMPORAL_ADDRESS: '', TEMPORAL_TASK_QUEUE: '' }).taskQueue).toBe(
      'agent-loop-guard',
    );
    expect(() => readWorkerEnv({ TEMPORAL_ADDRESS: 'no-port' })).toThrow(/TEMPORAL_ADDRESS/);
    expect(() => readWorkerEnv({ LEDGER_URL: 'mysql://x' })).toThrow(/LEDGER_URL/);
  });
});
