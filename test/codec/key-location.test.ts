/**
 * Where the payload key lives (codec/load-codec.ts, docs/deploy.md "Payload encryption key"):
 * one absolute default shared by every process of a user whatever its working directory,
 * created only by the processes allowed to, and a clear error naming the path everywhere else.
 * Every test points XDG_CONFIG_HOME and HOME at temporary directories: nothing here touches
 * the real home directory.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import {
  AesGcmCodec,
  CodecConfigError,
  defaultKeyFile,
  keyFileJson,
  KeyRing,
  LEGACY_KEY_FILE,
  loadPayloadCodec,
  readKeyFile,
  readOrCreateKeyFile,
  resolveKeyFile,
} from '../../codec';
import { codecSettings } from '../../client/connect';
import { CliError } from '../../client/format';

const ROOT = resolve(__dirname, '../..');
const TSX = join(ROOT, 'node_modules/.bin/tsx');
const PROBE = join(__dirname, 'fixtures/key-probe.ts');
const tmp = (what: string) => mkdtempSync(join(tmpdir(), `alg-key-${what}-`));

/** A temporary user: its own HOME and XDG_CONFIG_HOME, and no key configured. */
function user(): { env: NodeJS.ProcessEnv; home: string; config: string; keyFile: string } {
  const home = tmp('home');
  const config = join(home, 'xdg');
  return {
    env: { HOME: home, XDG_CONFIG_HOME: config },
    home,
    config,
    keyFile: join(config, 'agent-loop-guard', 'codec-keys.json'),
  };
}

/** process.env with the test's key ring taken away and `u`'s home put in. */
const childEnv = (u: { env: NodeJS.ProcessEnv }): NodeJS.ProcessEnv => ({
  ...process.env,
  AGENT_CODEC: '',
  AGENT_CODEC_KEYS: '',
  AGENT_CODEC_ACTIVE_KEY: '',
  AGENT_CODEC_KEY_FILE: '',
  ...u.env,
});

function probe(
  mode: 'create' | 'read',
  cwd: string,
  env: NodeJS.ProcessEnv,
): {
  keyId?: string;
  keyFile?: string;
  created?: string | null;
  error?: string;
  stderr: string;
  status: number | null;
} {
  const r = spawnSync(TSX, [PROBE, mode], { cwd, env, encoding: 'utf8', timeout: 60_000 });
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  if (!line.startsWith('{'))
    throw new Error(`probe printed no result (exit ${r.status}): ${r.stdout}${r.stderr}`);
  return { ...(JSON.parse(line) as object), stderr: r.stderr, status: r.status };
}

describe('the default key file', () => {
  it('is absolute and outside the working directory: under XDG_CONFIG_HOME, else ~/.config', () => {
    const u = user();
    const file = defaultKeyFile(u.env);
    expect(file).toBe(u.keyFile);
    expect(isAbsolute(file)).toBe(true);
    expect(relative(process.cwd(), file).startsWith('..')).toBe(true);
    expect(defaultKeyFile({ HOME: u.home })).toBe(join(u.home, '.config/agent-loop-guard/codec-keys.json'));
    // A relative XDG_CONFIG_HOME is ignored (XDG spec), never resolved against the cwd.
    expect(defaultKeyFile({ HOME: u.home, XDG_CONFIG_HOME: 'rel/dir' })).toBe(
      join(u.home, '.config/agent-loop-guard/codec-keys.json'),
    );
    // The working directory plays no part.
    expect(resolveKeyFile(u.env, tmp('a'))).toEqual(resolveKeyFile(u.env, tmp('b')));
    expect(resolveKeyFile(u.env, tmp('c'))).toEqual({ path: u.keyFile, origin: 'default' });
  });

  it('is created (0600, directory 0700) only by a process allowed to, and then read by every other', () => {
    const u = user();
    const first = loadPayloadCodec(u.env, { cwd: tmp('worker'), createKeyFile: true });
    expect(first.createdKeyFile).toBe(u.keyFile);
    expect(first.keyFile).toBe(u.keyFile);
    expect(first.source).toContain(`key file ${u.keyFile} (created)`);
    expect(statSync(u.keyFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(u.config, 'agent-loop-guard')).mode & 0o777).toBe(0o700);
    const again = loadPayloadCodec(u.env, { cwd: tmp('worker2'), createKeyFile: true });
    expect(again.createdKeyFile).toBeUndefined();
    const reader = loadPayloadCodec(u.env, { cwd: tmp('reader') });
    expect(reader.codec?.ring.activeKeyId).toBe(first.codec?.ring.activeKeyId);
    expect(reader.keyFile).toBe(u.keyFile);
  });

  it('a reader without a key fails naming the path it looked at and the variables, and creates nothing', () => {
    const u = user();
    const cwd = tmp('reader');
    let err: unknown;
    try {
      loadPayloadCodec(u.env, { cwd });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CodecConfigError);
    const message = (err as Error).message;
    expect(message).toContain(u.keyFile);
    expect(message).toMatch(/AGENT_CODEC_KEYS.*AGENT_CODEC_KEY_FILE/);
    expect(message).toContain('AGENT_CODEC=off');
    expect(existsSync(u.config)).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('an existing default file that is not a key file is an error, never replaced', () => {
    const u = user();
    mkdirSync(join(u.config, 'agent-loop-guard'), { recursive: true });
    writeFileSync(u.keyFile, 'not json');
    expect(() => loadPayloadCodec(u.env, { cwd: tmp('w'), createKeyFile: true })).toThrow(
      new RegExp(`key file ${u.keyFile} is not JSON`),
    );
    expect(readFileSync(u.keyFile, 'utf8')).toBe('not json');
    // A default location that cannot be created is an error naming it, too.
    const blocked = user();
    writeFileSync(blocked.config, 'a file where the directory should be');
    expect(() => loadPayloadCodec(blocked.env, { cwd: tmp('w'), createKeyFile: true })).toThrow(
      new RegExp(`cannot (create|read) .*${blocked.keyFile}`),
    );
  });
});

describe('AGENT_CODEC_KEY_FILE', () => {
  it('missing: an error naming the resolved absolute path and the variable; nothing is created', () => {
    const u = user();
    const cwd = tmp('app');
    const warnings: string[] = [];
    const load = (file: string, createKeyFile: boolean) =>
      loadPayloadCodec(
        { ...u.env, AGENT_CODEC_KEY_FILE: file },
        { cwd, createKeyFile, warn: (m) => warnings.push(m) },
      );
    for (const createKeyFile of [false, true]) {
      expect(() => load('keys/missing.json', createKeyFile)).toThrow(
        new RegExp(
          `cannot read key file ${join(cwd, 'keys/missing.json')}: no such file; AGENT_CODEC_KEY_FILE=keys/missing.json`,
        ),
      );
      expect(() => load('/nowhere/at/all.json', createKeyFile)).toThrow(
        /cannot read key file \/nowhere\/at\/all\.json: no such file/,
      );
    }
    expect(readdirSync(cwd)).toEqual([]);
    expect(existsSync(u.config)).toBe(false);
    // The relative path is shown resolved, with a warning that it depends on the cwd.
    expect(
      warnings.some((w) =>
        w.includes(
          `AGENT_CODEC_KEY_FILE=keys/missing.json is relative: using ${join(cwd, 'keys/missing.json')}`,
        ),
      ),
    ).toBe(true);
  });

  it('unreadable: an error naming the path', () => {
    const u = user();
    const cwd = tmp('app');
    mkdirSync(join(cwd, 'adir.json'));
    expect(() =>
      loadPayloadCodec({ ...u.env, AGENT_CODEC_KEY_FILE: join(cwd, 'adir.json') }, { cwd }),
    ).toThrow(new RegExp(`cannot read key file ${join(cwd, 'adir.json')}: .*EISDIR`));
    expect(() => readKeyFile(join(cwd, 'adir.json'))).toThrow(CodecConfigError);
  });

  it('wins over the default and the legacy file; the source shows the absolute path', () => {
    const u = user();
    loadPayloadCodec(u.env, { cwd: tmp('w'), createKeyFile: true }); // a default file exists
    const cwd = tmp('app');
    readOrCreateKeyFile(join(cwd, LEGACY_KEY_FILE));
    const ring = new KeyRing(new Map([['explicit', randomBytes(32)]]), 'explicit');
    writeFileSync(join(cwd, 'k.json'), keyFileJson(ring));
    const loaded = loadPayloadCodec({ ...u.env, AGENT_CODEC_KEY_FILE: 'k.json' }, { cwd, warn: () => {} });
    expect(loaded.codec?.ring.activeKeyId).toBe('explicit');
    expect(loaded.source).toBe(`key file ${join(cwd, 'k.json')}, active key explicit`);
  });
});

describe('the legacy ./data/codec-keys.json', () => {
  it('is still used when nothing is configured, with one warning saying how to make it explicit', () => {
    const u = user();
    const cwd = tmp('repo');
    const legacy = readOrCreateKeyFile(join(cwd, LEGACY_KEY_FILE)).ring;
    const warnings: string[] = [];
    const warn = (m: string) => warnings.push(m);
    for (const createKeyFile of [true, false]) {
      const loaded = loadPayloadCodec(u.env, { cwd, createKeyFile, warn });
      expect(loaded.codec?.ring.activeKeyId).toBe(legacy.activeKeyId);
      expect(loaded.keyFile).toBe(join(cwd, LEGACY_KEY_FILE));
      expect(loaded.createdKeyFile).toBeUndefined();
    }
    expect(warnings).toHaveLength(1); // once per process
    expect(warnings[0]).toContain(`legacy payload key file ${join(cwd, LEGACY_KEY_FILE)}`);
    expect(warnings[0]).toContain(`AGENT_CODEC_KEY_FILE=${join(cwd, LEGACY_KEY_FILE)}`);
    expect(warnings[0]).toContain(u.keyFile);
    expect(existsSync(u.keyFile)).toBe(false); // a creator did not make a second key beside it
  });
});

describe('agentctl (client/connect.ts codecSettings)', () => {
  it('creates the default key only on a local dev server; elsewhere exit 2 naming the path', () => {
    const u = user();
    let err: unknown;
    try {
      codecSettings(u.env, { address: 'temporal.example.com:7233' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(2);
    expect((err as Error).message).toContain(u.keyFile);
    expect(existsSync(u.config)).toBe(false);
    const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const local = codecSettings(u.env, { address: '127.0.0.1:7233' });
      expect(local.createdKeyFile).toBe(u.keyFile);
      expect(write).toHaveBeenCalledWith(
        expect.stringContaining(`created the payload encryption key file ${u.keyFile}`),
      );
    } finally {
      write.mockRestore();
    }
  });
});

describe('separate processes', () => {
  jest.setTimeout(120_000);

  it('with different working directories resolve the same key (a worker creates it, a reader in another directory finds it)', () => {
    const u = user();
    const env = childEnv(u);
    const worker = probe('create', tmp('app'), env);
    expect(worker.error).toBeUndefined();
    expect(worker.created).toBe(u.keyFile);
    const reader = probe('read', tmp('elsewhere'), env);
    expect(reader).toMatchObject({ keyId: worker.keyId, keyFile: u.keyFile, created: null });
    const second = probe('create', tmp('third'), env);
    expect(second).toMatchObject({ keyId: worker.keyId, created: null });
  });

  it('a reader process without a key exits with the path and the variables, and creates no file', () => {
    const u = user();
    const cwd = tmp('reader');
    const r = probe('read', cwd, childEnv(u));
    expect(r.status).toBe(2);
    expect(r.error).toContain(u.keyFile);
    expect(existsSync(u.config)).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('agentctl codec-server started elsewhere decodes what the worker encrypted, and without a key refuses', async () => {
    const u = user();
    const env = childEnv(u);
    // No key yet: the codec server refuses (exit 2), names the path, creates nothing.
    const refused = spawnSync(TSX, [join(ROOT, 'bin/agentctl.ts'), 'codec-server', '--port', '0'], {
      cwd: tmp('ops'),
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(u.keyFile);
    expect(refused.stderr).toContain('never creates a key');
    expect(existsSync(u.config)).toBe(false);

    // The worker (its own app directory) creates the key and encrypts with it.
    const worker = probe('create', tmp('app'), env);
    const ring = readKeyFile(u.keyFile);
    expect(ring.activeKeyId).toBe(worker.keyId);
    const encoded = await new AesGcmCodec(ring).encode([
      defaultPayloadConverter.toPayload({ secret: 'marker' }),
    ]);

    // The codec server, started in another directory with the same environment, decodes it.
    const child = spawn(TSX, [join(ROOT, 'bin/agentctl.ts'), 'codec-server', '--port', '0', '--quiet'], {
      cwd: tmp('ops2'),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      const url = await new Promise<string>((ok, fail) => {
        child.stdout.on('data', (b: Buffer) => {
          out += b.toString();
          const m = /codec server on (http:\/\/\S+)/.exec(out);
          if (m) ok(m[1]!);
        });
        child.once('exit', (code) => fail(new Error(`exited ${code}: ${out}`)));
      });
      expect(out).toContain(`key file ${u.keyFile}`);
      const body = temporal.api.common.v1.Payloads.toObject(
        temporal.api.common.v1.Payloads.fromObject({ payloads: encoded }),
        { bytes: String },
      );
      const r = await fetch(`${url}/decode`, { method: 'POST', body: JSON.stringify(body) });
      expect(r.status).toBe(200);
      const payload = temporal.api.common.v1.Payloads.fromObject((await r.json()) as object)
        .payloads[0] as Payload;
      expect(defaultPayloadConverter.fromPayload(payload)).toEqual({ secret: 'marker' });
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  });
});
