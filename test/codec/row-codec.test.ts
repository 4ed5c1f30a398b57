/**
 * Encryption at rest of the rows issue 9 moved out of history (storage/row-codec.ts): the
 * worker's AES-256-GCM codec seals them, key rotation still opens old rows, plain rows are read
 * as they are, and a process without the keys is told what to configure.
 */
import { randomBytes } from 'node:crypto';
import { AesGcmCodec, KeyRing } from '../../codec';
import { PLAIN_ROWS, RowCodec } from '../../storage/row-codec';
import { MemoryConversations } from '../../storage/conversation-store';

const ring = (active: string, ...ids: string[]) =>
  new KeyRing(new Map(ids.map((id) => [id, Buffer.from(id.padEnd(32, '#'))] as const)), active);

describe('RowCodec', () => {
  const json = JSON.stringify({
    role: 'user',
    content: 'the secret plan: ' + randomBytes(8).toString('hex'),
  });

  it('seals with the active key and opens again; the sealed text does not contain the plain text', async () => {
    const rows = new RowCodec([new AesGcmCodec(ring('k1', 'k1'))]);
    const sealed = await rows.seal(json);
    expect(sealed.startsWith('codec1:')).toBe(true);
    expect(sealed).not.toContain('secret');
    expect(Buffer.from(sealed.slice(7), 'base64').toString('latin1')).not.toContain('secret');
    expect(await rows.open(sealed)).toBe(json);
    // Two seals of the same text differ (fresh nonce), both open.
    const again = await rows.seal(json);
    expect(again).not.toBe(sealed);
    expect(await rows.open(again)).toBe(json);
  });

  it('opens rows sealed with an older key after rotation, and plain rows as they are', async () => {
    const old = new RowCodec([new AesGcmCodec(ring('k1', 'k1'))]);
    const sealed = await old.seal(json);
    const rotated = new RowCodec([new AesGcmCodec(ring('k2', 'k1', 'k2'))]);
    expect(await rotated.open(sealed)).toBe(json);
    expect(await rotated.open(json)).toBe(json);
    expect(await PLAIN_ROWS.seal(json)).toBe(json);
  });

  it('refuses a sealed row without keys, naming what to configure, and a row sealed with an unknown key', async () => {
    const sealed = await new RowCodec([new AesGcmCodec(ring('k1', 'k1'))]).seal(json);
    await expect(PLAIN_ROWS.open(sealed)).rejects.toThrow(/AGENT_CODEC_KEYS/);
    await expect(new RowCodec([new AesGcmCodec(ring('k9', 'k9'))]).open(sealed)).rejects.toThrow(/k1/);
  });

  it('keeps content addresses independent of the key: the chain hash is over the plain JSON', async () => {
    const a = new MemoryConversations();
    const ref = await a.append('r', { hash: null, position: 0, chars: 0 }, [JSON.parse(json)]);
    expect(ref.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(ref.chars).toBe(json.length);
  });
});
