/** Key rings from AGENT_CODEC_KEYS and key files, and the encrypted-by-default policy. */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CodecConfigError,
  DEFAULT_KEY_FILE,
  isLocalDevServer,
  loadPayloadCodec,
  parseKeyList,
  readOrCreateKeyFile,
} from '../../codec';

const b64 = () => randomBytes(32).toString('base64');
const dir = () => mkdtempSync(join(tmpdir(), 'alg-codec-'));

describe('parseKeyList (AGENT_CODEC_KEYS)', () => {
  it('takes the last key as the active one unless AGENT_CODEC_ACTIVE_KEY names another', () => {
    const value = `old:${b64()}, new:${b64()}`;
    expect(parseKeyList(value).activeKeyId).toBe('new');
    expect(parseKeyList(value).keyIds).toEqual(['old', 'new']);
    expect(parseKeyList(value, 'old').activeKeyId).toBe('old');
  });

  it('refuses bad entries with a message that names the key and never shows key material', () => {
    const short = randomBytes(16).toString('base64');
    expect(() => parseKeyList(`k1:${short}`)).toThrow(/key "k1" is 16 bytes; AES-256 needs 32/);
    // The key material never reaches the message (a plain substring check: base64 has regex metacharacters).
    let message = '';
    try {
      parseKeyList(`k1:${short}`);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).not.toContain(short.slice(0, 8));
    expect(() => parseKeyList('no-colon')).toThrow(CodecConfigError);
    expect(() => parseKeyList(`k1:${b64()},k1:${b64()}`)).toThrow(/listed twice/);
    expect(() => parseKeyList(`k1:not*base64`)).toThrow(/not base64/);
    expect(() => parseKeyList(`k1:${b64()}`, 'k9')).toThrow(/AGENT_CODEC_ACTIVE_KEY: active key id "k9"/);
    expect(() => parseKeyList(' , ')).toThrow(/lists no key/);
  });
});

describe('loadPayloadCodec', () => {
  it('AGENT_CODEC=off is the only way to get no codec; other values are refused', () => {
    expect(loadPayloadCodec({ AGENT_CODEC: 'off' }).codec).toBeNull();
    expect(() => loadPayloadCodec({ AGENT_CODEC: 'maybe' })).toThrow(/AGENT_CODEC must be on .* or off/);
  });

  it('prefers AGENT_CODEC_KEYS over a key file', () => {
    const cwd = dir();
    readOrCreateKeyFile(join(cwd, DEFAULT_KEY_FILE));
    const loaded = loadPayloadCodec({ AGENT_CODEC_KEYS: `envkey:${b64()}` }, { cwd });
    expect(loaded.codec?.ring.activeKeyId).toBe('envkey');
    expect(loaded.source).toMatch(/^AGENT_CODEC_KEYS/);
  });

  it('reads AGENT_CODEC_KEY_FILE, which must exist and be well-formed', () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'k.json'), JSON.stringify({ activeKeyId: 'b', keys: { a: b64(), b: b64() } }));
    expect(loadPayloadCodec({ AGENT_CODEC_KEY_FILE: 'k.json' }, { cwd }).codec?.ring.keyIds).toEqual([
      'a',
      'b',
    ]);
    expect(() => loadPayloadCodec({ AGENT_CODEC_KEY_FILE: 'missing.json' }, { cwd })).toThrow(
      /cannot read key file .*missing\.json/,
    );
    writeFileSync(join(cwd, 'bad.json'), JSON.stringify({ keys: {} }));
    expect(() => loadPayloadCodec({ AGENT_CODEC_KEY_FILE: 'bad.json' }, { cwd })).toThrow(
      /must be \{"activeKeyId"/,
    );
  });

  it('without keys: refuses (production), naming the ways to configure them', () => {
    const cwd = dir();
    expect(() => loadPayloadCodec({}, { cwd })).toThrow(CodecConfigError);
    expect(() => loadPayloadCodec({}, { cwd })).toThrow(
      /AGENT_CODEC_KEYS.*AGENT_CODEC_KEY_FILE.*npm run dev:server.*AGENT_CODEC=off/,
    );
    expect(existsSync(join(cwd, DEFAULT_KEY_FILE))).toBe(false);
  });

  it('without keys on a dev setup: creates data/codec-keys.json (0600) once, then reuses it', () => {
    const cwd = dir();
    const first = loadPayloadCodec({}, { cwd, createKeyFile: true });
    const file = join(cwd, DEFAULT_KEY_FILE);
    expect(first.createdKeyFile).toBe(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const again = loadPayloadCodec({}, { cwd, createKeyFile: true });
    expect(again.createdKeyFile).toBeUndefined();
    expect(again.codec?.ring.activeKeyId).toBe(first.codec?.ring.activeKeyId);
    // A production process (no createKeyFile) finds the file too.
    expect(loadPayloadCodec({}, { cwd }).codec?.ring.activeKeyId).toBe(first.codec?.ring.activeKeyId);
    const json = JSON.parse(readFileSync(file, 'utf8')) as {
      activeKeyId: string;
      keys: Record<string, string>;
    };
    expect(Buffer.from(json.keys[json.activeKeyId]!, 'base64')).toHaveLength(32);
  });
});

describe('isLocalDevServer', () => {
  it('is true for loopback without TLS or an API key only', () => {
    expect(isLocalDevServer({ address: 'localhost:7233' })).toBe(true);
    expect(isLocalDevServer({ address: '127.0.0.1:41234' })).toBe(true);
    expect(isLocalDevServer({ address: '[::1]:7233' })).toBe(true);
    expect(isLocalDevServer({ address: 'temporal:7233' })).toBe(false);
    expect(isLocalDevServer({ address: 'ns.acct.tmprl.cloud:7233' })).toBe(false);
    expect(isLocalDevServer({ address: 'localhost:7233', tls: true })).toBe(false);
    expect(isLocalDevServer({ address: 'localhost:7233', apiKey: 'x' })).toBe(false);
  });
});
