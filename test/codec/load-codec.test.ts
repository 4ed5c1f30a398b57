/** Key rings from AGENT_CODEC_KEYS and key files, and the encrypted-by-default policy. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CodecConfigError,
  isLocalDevServer,
  LEGACY_KEY_FILE,
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
    readOrCreateKeyFile(join(cwd, LEGACY_KEY_FILE));
    const loaded = loadPayloadCodec({ AGENT_CODEC_KEYS: `envkey:${b64()}`, XDG_CONFIG_HOME: dir() }, { cwd });
    expect(loaded.codec?.ring.activeKeyId).toBe('envkey');
    expect(loaded.source).toMatch(/^AGENT_CODEC_KEYS/);
    expect(loaded.keyFile).toBeUndefined();
  });

  it('reads AGENT_CODEC_KEY_FILE, which must exist and be well-formed', () => {
    const cwd = dir();
    const warnings: string[] = [];
    const warn = (m: string) => warnings.push(m);
    writeFileSync(join(cwd, 'k.json'), JSON.stringify({ activeKeyId: 'b', keys: { a: b64(), b: b64() } }));
    const loaded = loadPayloadCodec({ AGENT_CODEC_KEY_FILE: 'k.json' }, { cwd, warn });
    expect(loaded.codec?.ring.keyIds).toEqual(['a', 'b']);
    expect(loaded.keyFile).toBe(join(cwd, 'k.json'));
    expect(loaded.source).toContain(join(cwd, 'k.json'));
    writeFileSync(join(cwd, 'bad.json'), JSON.stringify({ keys: {} }));
    expect(() => loadPayloadCodec({ AGENT_CODEC_KEY_FILE: 'bad.json' }, { cwd, warn })).toThrow(
      /must be \{"activeKeyId"/,
    );
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
