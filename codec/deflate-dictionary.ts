/**
 * The preset dictionary of the codec's compression (codec/aes-gcm-codec.ts, plaintext form
 * 0x01): what nearly every payload of an agent run repeats — the Payload header of a JSON
 * payload and the contract's keys and values (the tool activity's input and output, a
 * planner turn, a proposal, a result, a decision, a StopReport). With it a 500-byte
 * `runTool` completion deflates to ~150 bytes; without it to ~320 (history
 * bytes per step).
 *
 * FROZEN: every payload compressed with form 0x01 needs exactly these bytes to inflate, for
 * as long as any history holds one. A better dictionary is a new form (0x02) beside it, never
 * an edit of this one (test/codec/compression.test.ts pins its SHA-256).
 */

/** Fragments, rarest first: deflate finds the nearer (later) ones more cheaply. */
const FRAGMENTS: readonly string[] = [
  // StopReport, RunResult, checkpoints (snake_case contract, docs/spec.md §4).
  '"terminal_state":"STOPPED_LOOP_GUARD","guard_reason":"no_progress","completed":[],"last_safe_checkpoint":null,',
  '"unmet_precondition":null,"resume_condition":"external state changed (progress version above ","next_allowed_action":"',
  '"steps":0,"last_progress_version":0,"blocked_call":null,"final_message":"","terminal_state":"NEEDS_HUMAN",',
  '"terminal_state":"COMPLETED","reason":null,"executed":0,"cached":0,"stopped_at":0,"decisions":[',
  '{"index":0,"tool":"","decision":"execute","after":"continue"},',
  // Planner turns of a model (observations, usage, text).
  '{"type":"finish","summary":"","usage":{"tokens":0,"costUsd":0}},"callId":"toolu_","call_',
  '"observation":{"tool":"","kind":"SUCCESS","data":{},"guard":{"reason":"","note":""},"cached":true},',
  '"kind":"RETRYABLE","code":"","retryAfterMs":0,"message":"","kind":"PRECONDITION","unmet":"',
  '"kind":"FATAL","code":"","kind":"PENDING","ref":"","similarKey":null,"rejection":null,"ledger":null,',
  '"approval":null,"fixture":null,"approvalId":null,"approvalStopRef":null,"toolErrors":"model",',
  '"holder":null,"via":"ledger","via":"not_run","terminal":true,"effect":"read"',
  // The tool activity's input (RunToolInput) and its prefetched next turn (PrefetchInput).
  '{"runId":"","tool":"","args":{},"operationKey":"","fixture":null,',
  '"prefetch":{"planner":{"kind":"scripted","script":{"calls":[{"tool":"","args":{}}]},"live":true}}}',
  // The tool activity's output (RunToolOutput) with the next turn (PrefetchedTurn).
  '{"result":{"kind":"SUCCESS","data":{}},"via":"executed","progressVersion":0,',
  '"next":{"turn":{"type":"call","tool":"","args":null,"operationKey":null,',
  '"usage":{"tokens":0,"costUsd":0},"scriptIndex":0},"memory":{"next":1},',
  '"proposal":{"tool":"","args":{},"canonicalArgs":null,"fingerprint":"",',
  '"argsHash":"sha256:","operationKey":"","effect":"write"},"shared":7}}',
];

/** The protobuf header of a `json/plain` Payload: metadata `encoding` = `json/plain`, then `data`. */
const JSON_PAYLOAD_HEADER = '\n\x16\n\x08encoding\x12\njson/plain\x12';

/** Dictionary v1 (form 0x01). Built once; see the module comment before changing anything here. */
export const DEFLATE_DICTIONARY_V1: Buffer = Buffer.from(FRAGMENTS.join('') + JSON_PAYLOAD_HEADER, 'latin1');
