import {
  loadConnectionOptions,
  readSearchAttributesMode,
  readWorkerEnv,
  WORKER_ENV_VARS,
} from '../../worker/env';

describe('loadConnectionOptions (via @temporalio/envconfig)', () => {
  // TEMPORAL_CONFIG_FILE points nowhere real so a developer's ~/.config/temporalio/temporal.toml can't leak in.
  const base = { TEMPORAL_CONFIG_FILE: '/nonexistent/temporal.toml' };

  it('falls back to localhost:7233 / default without TLS', () => {
    const { connectionOptions, namespace } = loadConnectionOptions({ ...base });
    expect(connectionOptions.address).toBe('localhost:7233');
    expect(namespace).toBe('default');
    expect(connectionOptions.tls).toBeUndefined();
    expect(connectionOptions.apiKey).toBeUndefined();
  });

  it('uses TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE', () => {
    const { connectionOptions, namespace } = loadConnectionOptions({
      ...base,
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_NAMESPACE: 'prod',
    });
    expect(connectionOptions.address).toBe('temporal:7233');
    expect(namespace).toBe('prod');
  });

  it('an API key (Temporal Cloud) turns TLS on', () => {
    const { connectionOptions } = loadConnectionOptions({
      ...base,
      TEMPORAL_ADDRESS: 'us-east-1.aws.api.temporal.io:7233',
      TEMPORAL_NAMESPACE: 'ns.acct',
      TEMPORAL_API_KEY: 'secret',
    });
    expect(connectionOptions.apiKey).toBe('secret');
    expect(connectionOptions.tls).toBeTruthy();
  });

  it('mTLS from inline PEM data', () => {
    const { connectionOptions } = loadConnectionOptions({
      ...base,
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_TLS_CLIENT_CERT_DATA: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n',
      TEMPORAL_TLS_CLIENT_KEY_DATA: '-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n',
    });
    const tls = connectionOptions.tls as { clientCertPair?: { crt: Uint8Array; key: Uint8Array } };
    expect(Buffer.from(tls.clientCertPair!.crt).toString('utf8')).toContain('BEGIN CERTIFICATE');
  });
});

describe('readSearchAttributesMode (AGENT_REGISTER_SEARCH_ATTRIBUTES)', () => {
  it('registers by default (unset or empty)', () => {
    expect(readSearchAttributesMode({})).toBe('register');
    expect(readSearchAttributesMode({ AGENT_REGISTER_SEARCH_ATTRIBUTES: '' })).toBe('register');
  });

  it('true / false / skip, case- and space-insensitive', () => {
    for (const v of ['true', 'TRUE', '1', 'yes', 'on']) {
      expect(readSearchAttributesMode({ AGENT_REGISTER_SEARCH_ATTRIBUTES: v })).toBe('register');
    }
    for (const v of ['false', ' False ', '0', 'no', 'off']) {
      expect(readSearchAttributesMode({ AGENT_REGISTER_SEARCH_ATTRIBUTES: v })).toBe('check');
    }
    expect(readSearchAttributesMode({ AGENT_REGISTER_SEARCH_ATTRIBUTES: 'skip' })).toBe('skip');
  });

  it('rejects anything else, also through readWorkerEnv', () => {
    expect(() => readSearchAttributesMode({ AGENT_REGISTER_SEARCH_ATTRIBUTES: 'maybe' })).toThrow(
      /AGENT_REGISTER_SEARCH_ATTRIBUTES: must be true/,
    );
    expect(() => readWorkerEnv({ AGENT_REGISTER_SEARCH_ATTRIBUTES: 'maybe' })).toThrow(
      /AGENT_REGISTER_SEARCH_ATTRIBUTES/,
    );
    expect(() => readWorkerEnv({ AGENT_REGISTER_SEARCH_ATTRIBUTES: 'false' })).not.toThrow();
  });

  it('is one of the variables the worker reads', () => {
    expect(WORKER_ENV_VARS).toContain('AGENT_REGISTER_SEARCH_ATTRIBUTES');
  });
});
