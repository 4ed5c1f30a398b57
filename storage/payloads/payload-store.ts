/**
 * The payload store ("Large payloads"): values too large for workflow history —
 * a tool result's `data` above `AGENT_PAYLOAD_REF_BYTES` (64 KB by default) — are kept in
 * the ledger's database (`agent_payloads`, ledger migration 4) and the workflow carries a
 * small {@link PayloadRef} instead (common/payload-limits.ts). The store runs on the
 * ledger's own connection through {@link LedgerDatabase}, so the SQL below is written once
 * for SQLite and PostgreSQL.
 *
 * Rows are content-addressed: the id is the SHA-256 of the value's JSON, so a retried
 * activity that stores the same value again writes nothing new. Rows belong to a run (its
 * workflow id) and go with it: the reaper deletes them with the run's ledger records
 * (activities/reaper.ts), never while the run could still resume.
 */
import { createHash } from 'node:crypto';
import {
  DEFAULT_PAYLOAD_REF_BYTES,
  isPayloadRef,
  MAX_PAYLOAD_BYTES,
  PAYLOAD_PREVIEW_BYTES,
  PAYLOAD_REF_MARK,
  utf8Bytes,
  utf8Prefix,
  type PayloadRef,
} from '../../common/payload-limits';
import { SqlLedger, type Ledger, type LedgerDatabase } from '../ledger';
import { PLAIN_ROWS, type RowCodec } from '../row-codec';
import {
  PayloadCorruptError,
  PayloadInputError,
  PayloadNotFoundError,
  PayloadStoreUnavailableError,
} from './errors';

/** The most of a terminal result's `summary` a reference keeps beside it (UTF-8 bytes). */
export const REF_SUMMARY_BYTES = 16 * 1024;

/** Options of {@link PayloadStore.put}. */
export interface PutOptions {
  /** A terminal result's summary, kept in the reference (truncated to {@link REF_SUMMARY_BYTES}). */
  readonly summary?: string;
}

const sha256 = (text: string): string => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

function runIdOf(runId: unknown): string {
  if (typeof runId !== 'string' || runId === '')
    throw new PayloadInputError('runId must be a non-empty string');
  return runId;
}

/** The payload store over a ledger's database. */
export class PayloadStore {
  /**
   * @param rows seals the body column (storage/row-codec.ts): the worker's payload codec,
   *   so a payload out of history is as encrypted as it was in history
   */
  constructor(
    private readonly db: LedgerDatabase,
    private readonly rows: RowCodec = PLAIN_ROWS,
  ) {}

  /** The store beside `ledger`, on its connection; throws when the ledger is not a SQL ledger. */
  static over(ledger: Ledger, rows: RowCodec = PLAIN_ROWS): PayloadStore {
    if (!(ledger instanceof SqlLedger)) {
      throw new PayloadStoreUnavailableError(
        `the payload store needs the SQL ledger's database (sqlite: or postgres:), not a ${ledger.backend} ledger`,
      );
    }
    return new PayloadStore(ledger.database(), rows);
  }

  /**
   * Stores `value`'s JSON for `runId` and returns its reference. Idempotent: the same value
   * stored again (a retried activity) finds its row and writes nothing.
   */
  async put(runId: string, value: unknown, options: PutOptions = {}): Promise<PayloadRef> {
    const run = runIdOf(runId);
    const body = JSON.stringify(value);
    if (body === undefined) throw new PayloadInputError('a payload must be a JSON value (got undefined)');
    const id = sha256(body);
    const bytes = utf8Bytes(body);
    const sealed = await this.rows.seal(body);
    await this.db.unit('write', (tx) =>
      tx.run(
        `INSERT INTO agent_payloads (run_id, id, bytes, body, created_at) VALUES (?, ?, ?, ?, ${this.db.now})
         ON CONFLICT (run_id, id) DO NOTHING`,
        [run, id, bytes, sealed],
      ),
    );
    return {
      [PAYLOAD_REF_MARK]: 1,
      id,
      bytes,
      preview: utf8Prefix(body, PAYLOAD_PREVIEW_BYTES),
      ...(options.summary !== undefined ? { summary: utf8Prefix(options.summary, REF_SUMMARY_BYTES) } : {}),
    };
  }

  /** The value `ref` names; {@link PayloadNotFoundError} when the store does not hold it. */
  async get(runId: string, ref: PayloadRef): Promise<unknown> {
    const run = runIdOf(runId);
    if (!isPayloadRef(ref)) throw new PayloadInputError('not a payload reference');
    const row = await this.db.unit('read', (tx) =>
      tx.get<{ body: string }>('SELECT body FROM agent_payloads WHERE run_id = ? AND id = ?', [run, ref.id]),
    );
    if (!row) throw new PayloadNotFoundError(run, ref.id);
    const body = await this.rows.open(row.body);
    if (sha256(body) !== ref.id) throw new PayloadCorruptError(run, ref.id);
    return JSON.parse(body) as unknown;
  }

  /** How many payloads `runId` has stored and their total bytes. */
  async stats(runId: string): Promise<{ rows: number; bytes: number }> {
    const run = runIdOf(runId);
    const row = await this.db.unit('read', (tx) =>
      tx.get<{ n: number | string; b: number | string | null }>(
        'SELECT COUNT(*) AS n, SUM(bytes) AS b FROM agent_payloads WHERE run_id = ?',
        [run],
      ),
    );
    return { rows: Number(row?.n ?? 0), bytes: Number(row?.b ?? 0) };
  }

  /** Deletes every payload of these runs; answers the rows deleted (an empty list deletes nothing). */
  async deleteRuns(runIds: readonly string[]): Promise<number> {
    if (runIds.length === 0) return 0;
    const runs = runIds.map(runIdOf);
    const { changes } = await this.db.unit('write', (tx) =>
      tx.run(`DELETE FROM agent_payloads WHERE run_id IN (${runs.map(() => '?').join(', ')})`, runs),
    );
    return changes;
  }
}

/**
 * `data` as the workflow may carry it: unchanged when its JSON is at most `thresholdBytes`,
 * else stored and replaced by its reference (a terminal result's `summary` kept beside it).
 * Without a store, or when the store fails, the value stays inline (the caller's size guard
 * then decides whether it may still pass); `stored` says which happened.
 */
export async function offloadLarge(
  store: PayloadStore | null,
  runId: string,
  data: unknown,
  thresholdBytes: number,
  options: { terminal?: boolean } = {},
): Promise<{ data: unknown; stored: boolean; bytes: number; error?: string }> {
  if (data === undefined || data === null || isPayloadRef(data)) return { data, stored: false, bytes: 0 };
  const json = JSON.stringify(data);
  const bytes = json === undefined ? 0 : utf8Bytes(json);
  if (bytes <= thresholdBytes) return { data, stored: false, bytes };
  if (!store) return { data, stored: false, bytes, error: 'no payload store on this worker' };
  const summary =
    options.terminal && typeof (data as { summary?: unknown }).summary === 'string'
      ? (data as { summary: string }).summary
      : undefined;
  try {
    const ref = await store.put(runId, data, summary === undefined ? {} : { summary });
    return { data: ref, stored: true, bytes };
  } catch (err) {
    return { data, stored: false, bytes, error: (err as Error)?.message ?? String(err) };
  }
}

/** Options of {@link resolvePayloadRefs}. */
export interface ResolveOptions {
  /**
   * What a reference the store does not hold becomes: `throw` (default) a
   * {@link PayloadNotFoundError}; `preview` an object with the reference's preview, its
   * size and `payload_unavailable: true`, so a planner can go on.
   */
  readonly missing?: 'throw' | 'preview';
}

/**
 * `value` with every {@link PayloadRef} in it, at any depth, replaced by the stored value
 * (the planner's observation before the model sees it: its usual preview then applies).
 * Values without references come back as they are (the same object).
 */
export async function resolvePayloadRefs<T>(
  store: PayloadStore | null,
  runId: string,
  value: T,
  options: ResolveOptions = {},
): Promise<T> {
  const cache = new Map<string, unknown>();
  const one = async (ref: PayloadRef): Promise<unknown> => {
    if (cache.has(ref.id)) return cache.get(ref.id);
    let resolved: unknown;
    try {
      if (!store)
        throw new PayloadStoreUnavailableError(`payload ${ref.id}: this worker has no payload store`);
      resolved = await store.get(runId, ref);
    } catch (err) {
      if (options.missing !== 'preview') throw err;
      resolved = { payload_unavailable: true, bytes: ref.bytes, preview: ref.preview };
    }
    cache.set(ref.id, resolved);
    return resolved;
  };
  const walk = async (v: unknown): Promise<unknown> => {
    if (v === null || typeof v !== 'object') return v;
    if (isPayloadRef(v)) return one(v);
    if (Array.isArray(v)) {
      let changed = false;
      const out: unknown[] = [];
      for (const item of v) {
        const r = await walk(item);
        if (r !== item) changed = true;
        out.push(r);
      }
      return changed ? out : v;
    }
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
      const r = await walk(item);
      if (r !== item) changed = true;
      out[k] = r;
    }
    return changed ? out : v;
  };
  return (await walk(value)) as T;
}

/**
 * The reference threshold from the worker's environment (`AGENT_PAYLOAD_REF_BYTES`):
 * default {@link DEFAULT_PAYLOAD_REF_BYTES}; a value that is not a whole number of bytes
 * from 1024 to {@link MAX_PAYLOAD_BYTES} fails the worker's start, naming the variable.
 */
export function payloadRefBytesFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.AGENT_PAYLOAD_REF_BYTES?.trim();
  if (raw === undefined || raw === '') return DEFAULT_PAYLOAD_REF_BYTES;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < 1024 || n > MAX_PAYLOAD_BYTES) {
    throw new PayloadInputError(
      `AGENT_PAYLOAD_REF_BYTES must be a whole number of bytes from 1024 to ${MAX_PAYLOAD_BYTES}, got "${raw}"`,
    );
  }
  return n;
}
