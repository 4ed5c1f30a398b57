/**
 * Encryption at rest for what moved out of workflow history into the worker's
 * database: conversation messages (storage/conversation-store.ts) and large
 * payloads (storage/payloads). In history they were encrypted by the payload codec
 * (codec/); in the database they are encrypted by the very same codec chain — the same
 * AES-256-GCM keys, key ids and rotation — so moving data out of history never turns it
 * into plain text.
 *
 * A sealed column is `codec1:` + base64 of the encoded Temporal `Payload` the codecs produced.
 * A column without the prefix is plain JSON (a worker with `AGENT_CODEC=off`, rows written
 * before): it is read as it is. Content hashes are always over the plain JSON, so a row's
 * address does not depend on the key that sealed it.
 */
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

const PREFIX = 'codec1:';
const ENCODING = 'json/plain';

/** Seals and opens database text columns with a payload codec chain (none: plain text). */
export class RowCodec {
  /** @param codecs the worker's data converter's `payloadCodecs`, applied in order (as Temporal does) */
  constructor(private readonly codecs: readonly PayloadCodec[] = []) {}

  /** True when rows are written encrypted. */
  get sealing(): boolean {
    return this.codecs.length > 0;
  }

  /** The column text for `json`. */
  async seal(json: string): Promise<string> {
    if (this.codecs.length === 0) return json;
    let payloads: Payload[] = [
      { metadata: { encoding: new TextEncoder().encode(ENCODING) }, data: new TextEncoder().encode(json) },
    ];
    for (const codec of this.codecs) payloads = await codec.encode(payloads);
    const bytes = temporal.api.common.v1.Payload.encode(payloads[0]!).finish();
    return PREFIX + Buffer.from(bytes).toString('base64');
  }

  /** The JSON of a column written by {@link seal} (or plain JSON, returned as it is). */
  async open(text: string): Promise<string> {
    if (!text.startsWith(PREFIX)) return text;
    if (this.codecs.length === 0) {
      throw new Error(
        'this row is encrypted and this process has no payload codec: configure the same codec keys as the workers (AGENT_CODEC_KEYS or AGENT_CODEC_KEY_FILE)',
      );
    }
    let payloads: Payload[] = [
      temporal.api.common.v1.Payload.decode(Buffer.from(text.slice(PREFIX.length), 'base64')) as Payload,
    ];
    for (const codec of [...this.codecs].reverse()) payloads = await codec.decode(payloads);
    const data = payloads[0]?.data;
    if (!data) throw new Error('a sealed row decoded to no data');
    return new TextDecoder().decode(data);
  }
}

/** Plain text rows (tests, `AGENT_CODEC=off`). */
export const PLAIN_ROWS = new RowCodec();
