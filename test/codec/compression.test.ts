/**
 * The codec's compression inside the encryption (issue 42): smaller ciphertext for the run's
 * payloads, every form readable by every codec, a frozen dictionary, tampering still refused.
 */
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { AesGcmCodec, CodecConfigError, CodecError, KeyRing, loadPayloadCodec } from '../../codec';
import { DEFLATE_DICTIONARY_V1 } from '../../codec/deflate-dictionary';

const key = randomBytes(32);
const ring = () => new KeyRing(new Map([['k1', key]]), 'k1');
const env = { AGENT_CODEC_KEYS: `k1:${key.toString('base64')}` };

/** A `runTool` completion as it crosses history every step (bench:floor --dump). */
const completion = {
  result: { kind: 'SUCCESS', data: { n: 2 } },
  via: 'executed',
  progressVersion: 3,
  next: {
    turn: {
      type: 'call',
      tool: 'floor_write',
      args: null,
      operationKey: null,
      usage: { tokens: 0, costUsd: 0 },
      scriptIndex: 0,
    },
    memory: { next: 1 },
    proposal: {
      tool: 'floor_write',
      args: { tag: 'bb565ece', n: 3 },
      canonicalArgs: null,
      fingerprint: 'floor_write:8cba6604762c01c5',
      argsHash: 'sha256:441f5719170f797938742bffd6cdba0edbcc7b7a0968811c172cdc6ac2639cc9',
      operationKey: 'floor:bb565ece:3',
      effect: 'write',
    },
    shared: 7,
  },
};
const payloadOf = (v: unknown): Payload => defaultPayloadConverter.toPayload(v) as Payload;
const bytes = (p: Payload): number => temporal.api.common.v1.Payload.encode(p).finish().length;

async function roundTrip(writer: AesGcmCodec, reader: AesGcmCodec, v: unknown): Promise<unknown> {
  const [enc] = await writer.encode([payloadOf(v)]);
  const [dec] = await reader.decode([enc!]);
  return defaultPayloadConverter.fromPayload(dec!);
}

describe('codec compression', () => {
  it('makes a step payload much smaller than encryption alone, and reads back exactly', async () => {
    const squeezed = new AesGcmCodec(ring());
    const plain = new AesGcmCodec(ring(), { compress: false });
    const [a] = await squeezed.encode([payloadOf(completion)]);
    const [b] = await plain.encode([payloadOf(completion)]);
    expect(bytes(a!)).toBeLessThan(bytes(b!) * 0.6);
    expect(await roundTrip(squeezed, squeezed, completion)).toEqual(completion);
  });

  it('reads every form with every codec: compressed by one without compression, and the other way round', async () => {
    const squeezed = new AesGcmCodec(ring());
    const plain = new AesGcmCodec(ring(), { compress: false });
    expect(await roundTrip(squeezed, plain, completion)).toEqual(completion);
    expect(await roundTrip(plain, squeezed, completion)).toEqual(completion);
  });

  it('leaves a payload uncompressed when deflate would not make it smaller (random binary, tiny JSON)', async () => {
    const codec = new AesGcmCodec(ring());
    const plain = new AesGcmCodec(ring(), { compress: false });
    for (const v of [{ n: 1 }, new Uint8Array(randomBytes(300))]) {
      const [a] = await codec.encode([payloadOf(v)]);
      const [b] = await plain.encode([payloadOf(v)]);
      expect(bytes(a!)).toBe(bytes(b!));
      expect(await roundTrip(codec, plain, v)).toEqual(v);
    }
  });

  it('refuses a compressed plaintext that does not inflate, though it decrypts', async () => {
    const codec = new AesGcmCodec(ring());
    // A well-formed ciphertext (right key, right AAD) around 0x01 and garbage: authenticated, not inflatable.
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 });
    cipher.setAAD(Buffer.from('k1'));
    const body = Buffer.concat([Buffer.from([1]), randomBytes(40)]);
    const data = Buffer.concat([nonce, cipher.update(body), cipher.final(), cipher.getAuthTag()]);
    const [real] = await codec.encode([payloadOf(completion)]);
    await expect(codec.decode([{ metadata: real!.metadata, data }])).rejects.toThrow(CodecError);
    await expect(codec.decode([{ metadata: real!.metadata, data }])).rejects.toThrow(/did not inflate/);
  });

  it('keeps dictionary v1 frozen: payloads already in histories need exactly these bytes', () => {
    expect(createHash('sha256').update(DEFLATE_DICTIONARY_V1).digest('hex')).toBe(
      '6dd9b72a3a6121ebdbd54aa0f19981be979a8c6a450ee039acab1931e9654047',
    );
    // It fits form 0x01's 2 KiB window whole (a longer one would be cut to its last 2 KiB).
    expect(DEFLATE_DICTIONARY_V1.length).toBeLessThanOrEqual(2048);
    const z = deflateRawSync(Buffer.from(JSON.stringify(completion)), {
      dictionary: DEFLATE_DICTIONARY_V1,
      windowBits: 11,
    });
    expect(z.length).toBeLessThan(200);
  });

  it('AGENT_CODEC_COMPRESS: on by default, off leaves it out, anything else is refused by name', () => {
    expect(loadPayloadCodec(env).codec!.compress).toBe(true);
    expect(loadPayloadCodec({ ...env, AGENT_CODEC_COMPRESS: 'off' }).codec!.compress).toBe(false);
    expect(loadPayloadCodec({ ...env, AGENT_CODEC_COMPRESS: 'ON' }).codec!.compress).toBe(true);
    expect(() => loadPayloadCodec({ ...env, AGENT_CODEC_COMPRESS: 'gzip' })).toThrow(CodecConfigError);
    expect(() => loadPayloadCodec({ ...env, AGENT_CODEC_COMPRESS: 'gzip' })).toThrow(/AGENT_CODEC_COMPRESS/);
  });
});
