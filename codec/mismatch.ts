/**
 * A payload one side cannot decode: the client and the run's worker do not
 * share a payload codec — a key on one side the other lacks, or the codec on at one side and
 * off at the other. That is a configuration error, never an operator refusal: it has its own
 * class (and agentctl its own exit code, docs/cli.md), and its message says which side lacks
 * what and how to fix it.
 *
 * How each direction shows (test/ai-sdk/codec-mismatch.test.ts):
 *  - the client cannot decode the worker's payloads (a key it lacks, or AGENT_CODEC=off here):
 *    the client's own codec throws UnknownKeyError / PayloadDecryptionError, or its payload
 *    converter `Unknown encoding: binary/encrypted`, on a query's answer;
 *  - the worker has no codec: the worker's payload converter cannot read the update's
 *    encrypted argument and the update is rejected with `Unknown encoding: binary/encrypted`
 *    (the run is unchanged);
 *  - the worker lacks this client's key: its codec throws while decoding the activation and the
 *    SDK fails the workflow task (a `WorkflowTaskFailed` event with the codec's message); the
 *    update is not applied, it stays on the server and the SDK retries the task until a worker
 *    with the key takes it.
 */
import { CodecError, PayloadDecryptionError, UnknownKeyError } from './errors';

/** Which side cannot decode the other's payloads. */
export type CodecMismatchSide = 'client' | 'worker';

const DOCS = 'docs/deploy.md "Payload encryption key"';

/** The messages of a payload that could not be decoded, wherever it was thrown (a failure keeps only the message). */
const DECODE_FAILURE: readonly RegExp[] = [
  /Unknown encoding: binary\/encrypted/,
  /payload was encrypted with key id "[^"]*", which is not in the key ring/,
  /encrypted payload \(key id "[^"]*"\) failed authentication/,
  /an encrypted payload has no encryption-key-id metadata/,
];

/**
 * The message of a payload-decode failure in `err` or its causes (a codec error of this package,
 * or the payload converter's `Unknown encoding: binary/encrypted`), else null.
 */
export function payloadDecodeFailure(err: unknown): string | null {
  for (let e = err, depth = 0; e !== null && e !== undefined && depth < 8; depth++) {
    if (e instanceof UnknownKeyError || e instanceof PayloadDecryptionError) return e.message;
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && DECODE_FAILURE.some((re) => re.test(message))) return message;
    const next = (e as { cause?: unknown }).cause;
    if (next === e) break;
    e = next;
  }
  return null;
}

/** The codec failure an error carries as a plain message (e.g. a `WorkflowTaskFailed` event's). */
export function isPayloadDecodeMessage(message: string): boolean {
  return DECODE_FAILURE.some((re) => re.test(message));
}

/**
 * The client and the run's worker do not share a payload codec; see the module comment.
 * `side` is the side that could not decode; `detail` the codec's own words.
 */
export class PayloadCodecMismatchError extends CodecError {
  override readonly code: string = 'payload_codec_mismatch';

  constructor(
    readonly side: CodecMismatchSide,
    readonly detail: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** What the client knows about its own codec, for the message. */
export interface ClientCodecInfo {
  /** The client encrypts (a codec is configured). */
  readonly encrypts: boolean;
  /** The key id it encrypts with, when known. */
  readonly activeKeyId?: string;
}

/**
 * The error for a payload `side` could not decode, with what to change. `action` says what was
 * attempted (`stop`, `resume`, `the status query`) and whether anything happened.
 */
export function codecMismatch(
  side: CodecMismatchSide,
  detail: string,
  client: ClientCodecInfo,
  action: string,
  options?: ErrorOptions,
): PayloadCodecMismatchError {
  const plainHere = /Unknown encoding: binary\/encrypted/.test(detail);
  let fix: string;
  if (side === 'client') {
    fix = plainHere
      ? "the run's worker encrypts its payloads and this client has no payload codec (AGENT_CODEC=off?): unset AGENT_CODEC=off and give this client the workers' keys (the same AGENT_CODEC_KEYS or AGENT_CODEC_KEY_FILE)"
      : "the run's worker encrypts with a key this client does not hold: give this client the workers' keys (the same AGENT_CODEC_KEYS or AGENT_CODEC_KEY_FILE)";
  } else if (plainHere) {
    fix =
      "the run's worker has no payload codec, and this client encrypts (AGENT_CODEC is on by default): set the worker up with agent-loop-guard's plugin " +
      '(plugins: [new AgentLoopGuardPlugin(…)], docs/ai-sdk.md "On the worker"; or dataConverter: dataConverterOf(loadPayloadCodec(process.env))) with the same keys and restart it' +
      ' — or, for a deployment that does not encrypt, run this client with AGENT_CODEC=off';
  } else {
    fix =
      `the run's worker cannot decrypt what this client sends${client.activeKeyId ? ` (key id "${client.activeKeyId}")` : ''}: ` +
      "give the worker this client's keys (the same AGENT_CODEC_KEYS or AGENT_CODEC_KEY_FILE) and restart it";
  }
  return new PayloadCodecMismatchError(
    side,
    detail,
    `payload codec mismatch: ${fix} (${DOCS}). ${action}. The ${side === 'client' ? 'client' : 'worker'} said: ${detail}`,
    options,
  );
}
