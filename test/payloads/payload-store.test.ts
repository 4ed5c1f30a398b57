/**
 * The payload store (storage/payloads, issue 9) on both backends: content-addressed,
 * idempotent puts, typed errors for a missing or altered row, per-run deletion, and the
 * deep reference resolver the plan activity uses before the model sees an observation.
 */
import { createHash } from 'node:crypto';
import type { Ledger } from '../../storage/ledger';
import {
  isPayloadRef,
  offloadLarge,
  PayloadCorruptError,
  PayloadInputError,
  PayloadNotFoundError,
  PayloadStore,
  PayloadStoreUnavailableError,
  resolvePayloadRefs,
  REF_SUMMARY_BYTES,
  type PayloadRef,
} from '../../storage/payloads';
import { PAYLOAD_PREVIEW_BYTES } from '../../common/payload-limits';
import { backendNames, createTestDb, type TestDb } from '../ledger/helpers/backends';

const big = (n: number, ch = 'x') => ({ rows: [{ id: 1, text: ch.repeat(n) }] });
const sha = (s: string) => `sha256:${createHash('sha256').update(s, 'utf8').digest('hex')}`;

describe.each(backendNames)('PayloadStore on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;
  let store: PayloadStore;
  const rows = async (runId: string) =>
    Number((await db.exec('SELECT COUNT(*) AS n FROM agent_payloads WHERE run_id = ?', [runId]))[0]?.n);

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
    store = PayloadStore.over(ledger);
  });
  afterAll(async () => {
    await db?.cleanup();
  });

  it('put stores the JSON under its SHA-256 and answers a small reference; a retried put writes nothing new', async () => {
    const value = big(200_000, 'é'); // 2 bytes per character in UTF-8
    const json = JSON.stringify(value);
    const ref = await store.put('run-put', value);
    expect(isPayloadRef(ref)).toBe(true);
    expect(ref.id).toBe(sha(json));
    expect(ref.bytes).toBe(Buffer.byteLength(json, 'utf8'));
    expect(ref.bytes).toBeGreaterThan(400_000);
    expect(Buffer.byteLength(ref.preview, 'utf8')).toBeLessThanOrEqual(PAYLOAD_PREVIEW_BYTES);
    expect(json.startsWith(ref.preview)).toBe(true);
    expect(JSON.stringify(ref).length).toBeLessThan(2_000);
    expect(await rows('run-put')).toBe(1);

    const again = await store.put('run-put', value);
    expect(again).toEqual(ref);
    expect(await rows('run-put')).toBe(1);
    expect(await store.stats('run-put')).toEqual({ rows: 1, bytes: ref.bytes });
    // The same value for another run is that run's row.
    await store.put('run-put-2', value);
    expect(await rows('run-put-2')).toBe(1);
  });

  it('get answers the value; a missing, foreign or altered row is a typed error', async () => {
    const value = { nested: [1, 'two', { three: null }], s: 'ü'.repeat(10) };
    const ref = await store.put('run-get', value);
    expect(await store.get('run-get', ref)).toEqual(value);
    await expect(store.get('run-other', ref)).rejects.toBeInstanceOf(PayloadNotFoundError);
    await expect(store.get('run-other', ref)).rejects.toThrow(
      `payload ${ref.id} of run run-other is not in the payload store`,
    );
    const unknown: PayloadRef = { ...ref, id: sha('never stored') };
    await expect(store.get('run-get', unknown)).rejects.toBeInstanceOf(PayloadNotFoundError);
    await expect(store.get('run-get', { id: 'x' } as unknown as PayloadRef)).rejects.toBeInstanceOf(
      PayloadInputError,
    );
    await expect(store.put('', 1)).rejects.toThrow('runId must be a non-empty string');
    await expect(store.put('run-get', undefined)).rejects.toThrow('a payload must be a JSON value');

    await db.exec('UPDATE agent_payloads SET body = ? WHERE run_id = ? AND id = ?', [
      '{"tampered":1}',
      'run-get',
      ref.id,
    ]);
    await expect(store.get('run-get', ref)).rejects.toBeInstanceOf(PayloadCorruptError);
  });

  it('deleteRuns deletes only those runs; an empty list deletes nothing', async () => {
    await store.put('run-del-a', { a: 1 });
    await store.put('run-del-a', { a: 2 });
    await store.put('run-del-b', { b: 1 });
    expect(await store.deleteRuns([])).toBe(0);
    expect(await store.deleteRuns(['run-del-a', 'run-none'])).toBe(2);
    expect(await rows('run-del-a')).toBe(0);
    expect(await rows('run-del-b')).toBe(1);
  });

  it('offloadLarge keeps small data inline and stores large data; a terminal summary stays beside the reference', async () => {
    const small = { ok: true };
    expect(await offloadLarge(store, 'run-off', small, 1024)).toEqual({
      data: small,
      stored: false,
      bytes: 11,
    });
    const large = big(5_000);
    const off = await offloadLarge(store, 'run-off', large, 1024);
    expect(off.stored).toBe(true);
    expect(isPayloadRef(off.data)).toBe(true);
    expect(await store.get('run-off', off.data as PayloadRef)).toEqual(large);

    const terminal = { summary: 'done: all 3 reports written', report: 'r'.repeat(5_000) };
    const t = await offloadLarge(store, 'run-off', terminal, 1024, { terminal: true });
    expect((t.data as PayloadRef).summary).toBe(terminal.summary);
    const hugeSummary = { summary: 's'.repeat(REF_SUMMARY_BYTES * 2) };
    const h = await offloadLarge(store, 'run-off', hugeSummary, 1024, { terminal: true });
    expect((h.data as PayloadRef).summary).toHaveLength(REF_SUMMARY_BYTES);
    // A reference is never stored again, and no store leaves data inline, saying why.
    expect(await offloadLarge(store, 'run-off', off.data, 1)).toMatchObject({
      data: off.data,
      stored: false,
    });
    expect(await offloadLarge(null, 'run-off', large, 1024)).toMatchObject({
      data: large,
      stored: false,
      error: 'no payload store on this worker',
    });
    expect(await rows('run-off')).toBe(3);
  });

  it('resolvePayloadRefs replaces every reference at any depth and leaves the rest as it was', async () => {
    const a = big(3_000, 'a');
    const b = ['b', 'b'];
    const ra = await store.put('run-res', a);
    const rb = await store.put('run-res', b);
    const obs = { tool: 't', kind: 'SUCCESS', data: ra, more: [{ deep: rb }, 7, null], same: ra };
    const resolved = await resolvePayloadRefs(store, 'run-res', obs);
    expect(resolved).toEqual({ tool: 't', kind: 'SUCCESS', data: a, more: [{ deep: b }, 7, null], same: a });
    expect(obs.data).toBe(ra); // the input is not changed
    const plain = { tool: 't', data: { x: [1, 2] } };
    expect(await resolvePayloadRefs(store, 'run-res', plain)).toBe(plain);
    expect(await resolvePayloadRefs(store, 'run-res', null)).toBeNull();

    const gone: PayloadRef = { ...ra, id: sha('gone') };
    await expect(resolvePayloadRefs(store, 'run-res', { data: gone })).rejects.toBeInstanceOf(
      PayloadNotFoundError,
    );
    expect(await resolvePayloadRefs(store, 'run-res', { data: gone }, { missing: 'preview' })).toEqual({
      data: { payload_unavailable: true, bytes: ra.bytes, preview: ra.preview },
    });
    await expect(resolvePayloadRefs(null, 'run-res', { data: ra })).rejects.toBeInstanceOf(
      PayloadStoreUnavailableError,
    );
  });
});

describe('PayloadStore.over', () => {
  it('refuses a ledger without a SQL database', () => {
    expect(() => PayloadStore.over({ backend: 'memory' } as unknown as Ledger)).toThrow(
      "the payload store needs the SQL ledger's database (sqlite: or postgres:), not a memory ledger",
    );
  });
});
