/**
 * The conversation store: an LLM planner's conversation lives here, in the
 * worker's database (the ledger's: SQLite by default, PostgreSQL when `LEDGER_URL` is),
 * not in workflow history. The workflow carries only a {@link ConversationRef}.
 *
 * Rows are content-addressed and append-only (ledger migration 4, `agent_conversation`):
 * each message's `hash` is the chain hash of the conversation up to and including it, so
 *
 * - a reference (conversation, length, hash) names one exact prefix, whatever was written
 *   after it (a refused turn, a retried attempt that got another reply, a zombie attempt);
 * - appending the same messages again writes nothing (`ON CONFLICT DO NOTHING`): a retried
 *   `plan` activity never appends twice;
 * - a resume re-asks from the reference *before* the refused turn — a length, not a copy.
 *
 * Reading is bounded: {@link ConversationStore.tail} walks back from the reference only as far
 * as a character budget reaches (one recursive query), so a turn costs the same at turn 1,000
 * as at turn 100. `agent_planner_turns` keeps each scheduled `plan` activity's answer, so a
 * retried attempt returns it instead of asking (and paying) the model again.
 */
import { createHash } from 'node:crypto';
import { AgentLoopGuardError } from '../common/errors';
import { SqlLedger, type Ledger, type LedgerDatabase } from './ledger';
import type { ChainTip, ConversationAccess, ConversationRef, StoredMessage } from '../common/conversation';
import { PLAIN_ROWS, type RowCodec } from './row-codec';
import { PlannerProtocolError } from '../planners/errors';

export type { ConversationAccess, ConversationRef, StoredMessage };

/** The empty conversation of `conversation`. */
export function emptyRef(conversation: string): ConversationRef {
  return { conversation, length: 0, hash: null, chars: 0 };
}

const GENESIS = 'agent-loop-guard/conversation/v1';

/** The chain hash of a message after `parent`. */
export function chainHash(parent: string | null, json: string): string {
  return createHash('sha256')
    .update(parent ?? GENESIS)
    .update('\n')
    .update(json)
    .digest('hex');
}

/** The rows `messages` become after `after` (hash, parent, position, cumulative chars), and the new end. */
function chained(
  conversation: string,
  after: ChainTip,
  messages: readonly unknown[],
): {
  rows: Array<{ hash: string; parent: string | null; position: number; cum: number; json: string }>;
  ref: ConversationRef;
} {
  let parent = after.hash;
  let position = after.position;
  let cum = after.chars;
  const rows = [];
  for (const m of messages) {
    const json = JSON.stringify(m);
    const hash = chainHash(parent, json);
    cum += json.length;
    rows.push({ hash, parent, position, cum, json });
    parent = hash;
    position += 1;
  }
  return { rows, ref: { conversation, length: position, hash: parent, chars: cum } };
}

/** A message's place in its chain, as the tail's walk reads it (its text is read apart). */
interface ChainLink {
  hash: string;
  parent_hash: string | null;
  position: number | string;
  chars: number | string;
  cum_chars: number | string;
}

/** The messages' texts a store keeps in memory by default, in characters (see {@link OpenedMessages}). */
export const OPENED_MESSAGES_CHARS = 8_000_000;

/** The most messages one query reads by hash (well under SQLite's and PostgreSQL's bind limits). */
const HASHES_PER_QUERY = 500;

/**
 * The JSON texts of messages this store opened or wrote lately, by conversation and chain hash,
 * oldest out first beyond a character budget. A row is immutable (its hash is the chain hash
 * of its text), so what is kept is what the database holds: a turn reads its tail's links and
 * opens only the messages it has not seen — the one or two the last turn added — instead of
 * decrypting and inflating the whole window again (~100 rows of 3 KB at turn 1,000 of
 * a long run). First in, first out: a conversation's oldest messages are the first to leave
 * its window too.
 */
class OpenedMessages {
  private readonly texts = new Map<string, string>();
  private chars = 0;

  constructor(private readonly budgetChars: number) {}

  get(conversation: string, hash: string): string | undefined {
    return this.texts.get(`${conversation}/${hash}`);
  }

  set(conversation: string, hash: string, json: string): void {
    if (json.length > this.budgetChars) return;
    const key = `${conversation}/${hash}`;
    const old = this.texts.get(key);
    if (old !== undefined) {
      this.texts.delete(key);
      this.chars -= old.length;
    }
    this.texts.set(key, json);
    this.chars += json.length;
    for (const [k, v] of this.texts) {
      if (this.chars <= this.budgetChars) break;
      this.texts.delete(k);
      this.chars -= v.length;
    }
  }
}

/** The conversation store over the ledger's database (migration 4). */
export class ConversationStore implements ConversationAccess {
  /** The texts of the messages this store wrote or opened lately. */
  private readonly opened: OpenedMessages;

  /**
   * @param rows seals the message column (storage/row-codec.ts): the worker's payload
   *   codec, so a conversation out of history is as encrypted as it was in history
   * @param openedChars the messages' texts kept in memory, in characters (0: none)
   */
  constructor(
    private readonly db: LedgerDatabase,
    private readonly rows: RowCodec = PLAIN_ROWS,
    openedChars: number = OPENED_MESSAGES_CHARS,
  ) {
    this.opened = new OpenedMessages(openedChars);
  }

  /** The store beside `ledger`, on its connection; null when the ledger is not a SQL ledger. */
  static over(ledger: Ledger, rows: RowCodec = PLAIN_ROWS): ConversationStore | null {
    return ledger instanceof SqlLedger ? new ConversationStore(ledger.database(), rows) : null;
  }

  async tail(ref: ConversationRef, maxChars: number): Promise<StoredMessage[]> {
    if (ref.length === 0 || ref.hash === null) return [];
    const budget = Math.max(0, Math.floor(maxChars));
    // Walk back from the tip while the messages from the parent to the tip still fit; the
    // tip itself is always read (a caller decides what to do with a message too big alone).
    // The links only: the texts this store has opened before are not read again.
    const links = await this.db.unit('read', (tx) =>
      tx.all<ChainLink>(
        `WITH RECURSIVE chain(hash, parent_hash, position, chars, cum_chars) AS (
           SELECT hash, parent_hash, position, chars, cum_chars FROM agent_conversation
            WHERE conversation_id = ? AND hash = ?
           UNION ALL
           SELECT c.hash, c.parent_hash, c.position, c.chars, c.cum_chars
             FROM agent_conversation c JOIN chain ON c.hash = chain.parent_hash
            WHERE c.conversation_id = ? AND ? - c.cum_chars + c.chars <= ?
         )
         SELECT hash, parent_hash, position, chars, cum_chars FROM chain ORDER BY position`,
        [ref.conversation, ref.hash, ref.conversation, ref.chars, budget],
      ),
    );
    const last = links[links.length - 1];
    if (!last || Number(last.position) !== ref.length - 1) throw this.missing(ref, ref.length, ref.hash);
    const texts = await this.texts(
      ref.conversation,
      links.map((l) => l.hash),
    );
    return links.map((l) => {
      const json = texts.get(l.hash);
      // Reaped between the two reads.
      if (json === undefined) throw this.missing(ref, Number(l.position) + 1, l.hash);
      return {
        position: Number(l.position),
        hash: l.hash,
        json,
        message: JSON.parse(json) as unknown,
        parentHash: l.parent_hash,
        charsBefore: Number(l.cum_chars) - Number(l.chars),
      };
    });
  }

  /** The JSON texts of `hashes` (of `conversation`): opened before, or read and opened now. */
  private async texts(conversation: string, hashes: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const unread: string[] = [];
    for (const h of hashes) {
      const json = this.opened.get(conversation, h);
      if (json === undefined) unread.push(h);
      else out.set(h, json);
    }
    for (let i = 0; i < unread.length; i += HASHES_PER_QUERY) {
      const some = unread.slice(i, i + HASHES_PER_QUERY);
      const rows = await this.db.unit('read', (tx) =>
        tx.all<{ hash: string; message: string }>(
          `SELECT hash, message FROM agent_conversation WHERE conversation_id = ? AND hash IN (${some.map(() => '?').join(', ')})`,
          [conversation, ...some],
        ),
      );
      for (const r of rows) {
        const json = await this.rows.open(r.message);
        this.opened.set(conversation, r.hash, json);
        out.set(r.hash, json);
      }
    }
    return out;
  }

  /** The refusal of a reference whose message `n` (1-based) the database does not hold. */
  private missing(ref: ConversationRef, n: number, hash: string): PlannerProtocolError {
    return new PlannerProtocolError(
      `conversation ${ref.conversation} has no message ${n} with hash ${hash.slice(0, 12)}… ` +
        '(reaped, or a database other than the one this run wrote to)',
    );
  }

  async append(
    conversation: string,
    after: ChainTip,
    messages: readonly unknown[],
  ): Promise<ConversationRef> {
    const chain = chained(conversation, after, messages);
    const rows: unknown[][] = [];
    for (const r of chain.rows) {
      rows.push([
        conversation,
        r.hash,
        r.parent,
        r.position,
        r.json.length,
        r.cum,
        await this.rows.seal(r.json),
      ]);
    }
    if (rows.length > 0) {
      await this.db.unit('write', async (tx) => {
        for (const row of rows) {
          await tx.run(
            `INSERT INTO agent_conversation (conversation_id, hash, parent_hash, position, chars, cum_chars, message, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ${this.db.now}) ON CONFLICT DO NOTHING`,
            row,
          );
        }
      });
      // The texts are what the rows hold (a row already there has the same hash, so the same text).
      for (const r of chain.rows) this.opened.set(conversation, r.hash, r.json);
    }
    return chain.ref;
  }

  async storedTurn(turnKey: string): Promise<unknown> {
    const row = await this.db.unit('read', (tx) =>
      tx.get<{ output: string }>('SELECT output FROM agent_planner_turns WHERE turn_key = ?', [turnKey]),
    );
    return row ? (JSON.parse(await this.rows.open(row.output)) as unknown) : null;
  }

  async saveTurn(turnKey: string, conversation: string, output: unknown): Promise<unknown> {
    const sealed = await this.rows.seal(JSON.stringify(output));
    const row = await this.db.unit('write', async (tx) => {
      await tx.run(
        `INSERT INTO agent_planner_turns (turn_key, conversation_id, output, created_at)
         VALUES (?, ?, ?, ${this.db.now}) ON CONFLICT DO NOTHING`,
        [turnKey, conversation, sealed],
      );
      return tx.get<{ output: string }>('SELECT output FROM agent_planner_turns WHERE turn_key = ?', [
        turnKey,
      ]);
    });
    return row ? (JSON.parse(await this.rows.open(row.output)) as unknown) : output;
  }

  /**
   * The reference of a conversation's newest message (the furthest position; among branches
   * of the same length the last written), or null when it has none. For operators
   * (`agentctl conversation`): a run's own memory names its exact reference.
   */
  async latest(conversation: string): Promise<ConversationRef | null> {
    const row = await this.db.unit('read', (tx) =>
      tx.get<{ hash: string; position: number | string; cum_chars: number | string }>(
        `SELECT hash, position, cum_chars FROM agent_conversation WHERE conversation_id = ?
          ORDER BY position DESC, created_at DESC LIMIT 1`,
        [conversation],
      ),
    );
    return row
      ? { conversation, length: Number(row.position) + 1, hash: row.hash, chars: Number(row.cum_chars) }
      : null;
  }

  /** Rows of a conversation (for `bench:long`, tests and operators). */
  async count(conversation?: string): Promise<number> {
    const row = await this.db.unit('read', (tx) =>
      conversation === undefined
        ? tx.get<{ n: number | string }>('SELECT count(*) AS n FROM agent_conversation')
        : tx.get<{ n: number | string }>(
            'SELECT count(*) AS n FROM agent_conversation WHERE conversation_id = ?',
            [conversation],
          ),
    );
    return Number(row?.n ?? 0);
  }
}

/** An in-memory {@link ConversationAccess} with the store's semantics (unit tests, embedders without SQL). */
export class MemoryConversations implements ConversationAccess {
  private readonly rows = new Map<
    string,
    { parent: string | null; position: number; chars: number; cum: number; json: string }
  >();
  private readonly turns = new Map<string, unknown>();

  async tail(ref: ConversationRef, maxChars: number): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    let hash = ref.hash;
    while (hash !== null) {
      const row = this.rows.get(`${ref.conversation}/${hash}`);
      if (!row)
        throw new PlannerProtocolError(`conversation ${ref.conversation} has no message with hash ${hash}`);
      if (out.length > 0 && ref.chars - row.cum + row.chars > maxChars) break;
      out.push({
        position: row.position,
        hash,
        json: row.json,
        message: JSON.parse(row.json) as unknown,
        parentHash: row.parent,
        charsBefore: row.cum - row.chars,
      });
      hash = row.parent;
    }
    return out.reverse();
  }

  async append(
    conversation: string,
    after: ChainTip,
    messages: readonly unknown[],
  ): Promise<ConversationRef> {
    const chain = chained(conversation, after, messages);
    for (const r of chain.rows) {
      const key = `${conversation}/${r.hash}`;
      if (!this.rows.has(key)) this.rows.set(key, { ...r, chars: r.json.length });
    }
    return chain.ref;
  }

  async storedTurn(turnKey: string): Promise<unknown> {
    return this.turns.has(turnKey) ? structuredClone(this.turns.get(turnKey)) : null;
  }

  async saveTurn(turnKey: string, _conversation: string, output: unknown): Promise<unknown> {
    if (!this.turns.has(turnKey)) this.turns.set(turnKey, JSON.parse(JSON.stringify(output)) as unknown);
    return structuredClone(this.turns.get(turnKey));
  }

  /** Rows stored. */
  get size(): number {
    return this.rows.size;
  }
}

/** A failure of the conversation store's database (not of the planner). */
export class ConversationStoreFault extends AgentLoopGuardError {
  readonly code = 'conversation_store_failed';
}

/**
 * The same store, its database failures thrown as {@link ConversationStoreFault} so the plan
 * activity can tell a database outage (infrastructure_fault) from a planner failure. A
 * {@link PlannerProtocolError} (a missing conversation) passes unchanged.
 */
export function storeFaultsTyped(store: ConversationAccess): ConversationAccess {
  const typed =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await fn(...args);
      } catch (err) {
        if (err instanceof PlannerProtocolError) throw err;
        throw new ConversationStoreFault(err instanceof Error ? err.message : String(err), { cause: err });
      }
    };
  return {
    tail: typed(store.tail.bind(store)),
    append: typed(store.append.bind(store)),
    storedTurn: typed(store.storedTurn.bind(store)),
    saveTurn: typed(store.saveTurn.bind(store)),
  };
}
