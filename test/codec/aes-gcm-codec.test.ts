/** The AES-256-GCM payload codec: round trip, rotation, tampering, unknown keys, plain pass-through. */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  AesGcmCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  KeyRing,
  keyIdOf,
  PayloadDecryptionError,
  UnknownKeyError,
} from '../../codec';

const MARKER = 'marker-7f3c-secret-tool-arg';
const ring = (id: string, key = randomBytes(32)) => new KeyRing(new Map([[id, key]]), id);
const utf8 = (b: Uint8Array | null | undefined) => Buffer.from(b ?? []).toString('utf8');
const payload = (): Payload =>
  defaultPayloadConverter.toPayload({ tool: 'search', args: { query: MARKER } }) as Payload;

async function one(codec: AesGcmCodec, op: 'encode' | 'decode', p: Payload): Promise<Payload> {
  const [out] = await codec[op]([p]);
  return out!;
}

describe('AesGcmCodec', () => {
  it('encrypts a payload so neither its data nor its metadata show, and decrypts it back exactly', async () => {
    const codec = new AesGcmCodec(ring('k1'));
    const plain = payload();
    const enc = await one(codec, 'encode', plain);
    expect(utf8(enc.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(keyIdOf(enc)).toBe('k1');
    expect(Buffer.from(enc.data!).includes(MARKER)).toBe(false);
    expect(Buffer.from(enc.data!).includes('json/plain')).toBe(false); // the inner encoding is hidden too
    const dec = await one(codec, 'decode', enc);
    expect(defaultPayloadConverter.fromPayload(dec)).toEqual({ tool: 'search', args: { query: MARKER } });
    expect(utf8(dec.metadata?.encoding)).toBe('json/plain');
  });

  it('uses a fresh nonce per payload: the same payload never encrypts to the same bytes', async () => {
    const codec = new AesGcmCodec(ring('k1'));
    const [a, b] = await codec.encode([payload(), payload()]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('rotation: after a new active key, old payloads still decrypt and new ones name the new key id', async () => {
    const old = ring('2025-01');
    const before = await one(new AesGcmCodec(old), 'encode', payload());
    const rotated = old.withActiveKey('2025-06', randomBytes(32));
    const codec = new AesGcmCodec(rotated);
    expect(defaultPayloadConverter.fromPayload(await one(codec, 'decode', before))).toMatchObject({
      args: { query: MARKER },
    });
    const after = await one(codec, 'encode', payload());
    expect(keyIdOf(after)).toBe('2025-06');
    // ...and a process still on the old ring cannot read them: it names the missing key.
    await expect(new AesGcmCodec(old).decode([after])).rejects.toThrow(UnknownKeyError);
    await expect(new AesGcmCodec(old).decode([after])).rejects.toThrow(/key id "2025-06".*known: 2025-01/);
  });

  it('detects tampering with the ciphertext, the tag, the nonce, the key id, or a cut-short payload', async () => {
    const k1 = randomBytes(32);
    const twoKeys = new KeyRing(
      new Map([
        ['k1', k1],
        ['k2', randomBytes(32)],
      ]),
      'k1',
    );
    const codec = new AesGcmCodec(twoKeys);
    const enc = await one(codec, 'encode', payload());
    const data = Buffer.from(enc.data!);
    const flip = (i: number): Payload => {
      const d = Buffer.from(data);
      d[i] = d[i]! ^ 0x01;
      return { metadata: enc.metadata, data: new Uint8Array(d) };
    };
    for (const bad of [
      flip(20), // ciphertext
      flip(data.length - 1), // GCM tag
      flip(0), // nonce
      { metadata: { ...enc.metadata, [KEY_ID_METADATA]: Buffer.from('k2') }, data: enc.data }, // other key id
      { metadata: enc.metadata, data: enc.data!.subarray(0, 20) }, // truncated
    ]) {
      await expect(codec.decode([bad])).rejects.toBeInstanceOf(PayloadDecryptionError);
    }
    // The untouched payload still decrypts (the checks above failed for the change, not the key).
    await expect(codec.decode([enc])).resolves.toHaveLength(1);
  });

  it('passes payloads that are not encrypted through unchanged (histories from before, AGENT_CODEC=off)', async () => {
    const codec = new AesGcmCodec(ring('k1'));
    const plain = payload();
    const binary = defaultPayloadConverter.toPayload(new Uint8Array([1, 2, 3])) as Payload;
    const nothing = defaultPayloadConverter.toPayload(undefined) as Payload;
    const out = await codec.decode([plain, binary, nothing]);
    expect(out[0]).toBe(plain);
    expect(out[1]).toBe(binary);
    expect(out[2]).toBe(nothing);
  });
});
