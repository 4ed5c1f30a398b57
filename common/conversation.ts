/**
 * The conversation store's contract (storage/conversation-store.ts), as types
 * only, so the planner contract (common/planner.ts) can name it. Sandbox-safe.
 */

/** Where a conversation stands: the workflow's whole view of it. */
export interface ConversationRef {
  /** The conversation's id: the run's workflow id (retention follows the run). */
  readonly conversation: string;
  /** Messages in the conversation. */
  readonly length: number;
  /** Chain hash of the last message (null for the empty conversation). */
  readonly hash: string | null;
  /** Characters of all messages' JSON. */
  readonly chars: number;
}

/** A stored message with its place in the chain. */
export interface StoredMessage {
  readonly position: number;
  readonly hash: string;
  /** The message's JSON text, exactly as stored and hashed. */
  readonly json: string;
  readonly message: unknown;
  /** Chain hash of the message before it (null for the first). */
  readonly parentHash: string | null;
  /** Characters of all messages before it. */
  readonly charsBefore: number;
}

/** Where an append continues a chain: the last message's hash (null at the start), its position and cumulative chars. */
export interface ChainTip {
  readonly hash: string | null;
  readonly position: number;
  readonly chars: number;
}

/** What a planner needs of the store (an in-memory one stands in for it in unit tests). */
export interface ConversationAccess {
  /**
   * The newest messages of `ref`'s conversation whose JSON totals at most `maxChars`
   * (oldest first), walking back from `ref.hash`. Fewer than `ref.length` when the budget
   * ends the walk.
   */
  tail(ref: ConversationRef, maxChars: number): Promise<StoredMessage[]>;
  /**
   * Appends `messages` after the message `after` (a hash in `ref`'s chain, or null for the
   * start) at position `position`; returns the new reference. Idempotent.
   */
  append(conversation: string, after: ChainTip, messages: readonly unknown[]): Promise<ConversationRef>;
  /** The stored answer of a scheduled `plan` activity (by its turn key), or null. */
  storedTurn(turnKey: string): Promise<unknown>;
  /** Stores a `plan` activity's answer; returns the one stored first (first writer wins). */
  saveTurn(turnKey: string, conversation: string, output: unknown): Promise<unknown>;
}
