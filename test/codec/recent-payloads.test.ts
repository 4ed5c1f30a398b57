/**
 * The codec remembers what it encrypted lately (issue 42): a worker decodes a step's tool input
 * and result moments after it encrypted them, and answers those from memory instead of
 * decrypting and inflating them again — but only for the exact bytes under the same key id;
 * anything else (another codec's payload, a changed key id, a flipped bit, one it forgot) is
 * decrypted and checked as before.
 */
import * as crypto from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { AesGcmCodec, KeyRing } from '../../codec';

const key = crypto.randomBytes(32);
const ring = () => new KeyRing(new Map([['k1', key]]), 'k1');
const payload = (n: number): Payload =>
  defaultPayloadConverter.toPayload({
    tool: 'floor_write',
    args: { tag: 'bb565ece', n },
    note: 'x'.repeat(200),
  });
const plain = (p: Payload) => defaultPayloadConverter.fromPayload(p);

afterEach(() => jest.restoreAllMocks());

/** Calls of the codec's decipher (the module object it calls through, not a namespace copy). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const decipherCalls = () => jest.spyOn(require('node:crypto') as typeof crypto, 'createDecipheriv');

it('answers its own recent payloads without the cipher, equal to decrypting them', async () => {
  const codec = new AesGcmCodec(ring());
  const [sealed] = await codec.encode([payload(1)]);
  const decipher = decipherCalls();
  const [back] = await codec.decode([sealed!]);
  expect(decipher).not.toHaveBeenCalled();
  expect(plain(back!)).toEqual(plain(payload(1)));
  // Another codec with the same key (another worker) decrypts the same bytes to the same payload.
  const [elsewhere] = await new AesGcmCodec(ring()).decode([sealed!]);
  expect(decipher).toHaveBeenCalledTimes(1);
  expect(plain(elsewhere!)).toEqual(plain(back!));
});

it('answers with bytes of its own: neither the encoder’s nor a decoder’s changes reach another decode', async () => {
  const codec = new AesGcmCodec(ring());
  const original = payload(3);
  const [sealed] = await codec.encode([original]);
  original.data!.fill(0); // the caller reuses its buffer
  const [first] = await codec.decode([sealed!]);
  expect(plain(first!)).toEqual(plain(payload(3)));
  first!.data!.fill(0); // a consumer scribbles on what it got
  expect(plain((await codec.decode([sealed!]))[0]!)).toEqual(plain(payload(3)));
});

it('decrypts, and so refuses, a remembered ciphertext under another key id or with a bit flipped', async () => {
  const codec = new AesGcmCodec(
    new KeyRing(
      new Map([
        ['k1', key],
        ['k2', crypto.randomBytes(32)],
      ]),
      'k1',
    ),
  );
  const [sealed] = await codec.encode([payload(2)]);
  const moved: Payload = {
    ...sealed!,
    metadata: { ...sealed!.metadata, 'encryption-key-id': new TextEncoder().encode('k2') },
  };
  await expect(codec.decode([moved])).rejects.toThrow();
  const data = Uint8Array.from(sealed!.data!);
  data[data.length - 1]! ^= 1;
  await expect(codec.decode([{ ...sealed!, data }])).rejects.toThrow();
  // The original still decodes.
  expect(plain((await codec.decode([sealed!]))[0]!)).toEqual(plain(payload(2)));
});

it('remembers a bounded number: an old payload is decrypted, still the same', async () => {
  const codec = new AesGcmCodec(ring());
  const [first] = await codec.encode([payload(0)]);
  for (let i = 1; i <= 300; i++) await codec.encode([payload(i)]);
  const decipher = decipherCalls();
  expect(plain((await codec.decode([first!]))[0]!)).toEqual(plain(payload(0)));
  expect(decipher).toHaveBeenCalledTimes(1);
});
