/**
 * Encrypted by default, on a real run (real dev server, real worker): a marker string in the
 * goal, the tool args, the tool result and the run result is nowhere in the raw history a
 * client without the keys fetches, yet the run works as usual (queries, result), and the
 * search attributes stay plain, so `AgentState` filtering still finds it.
 */
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { statusQuery } from '../../common/contracts';
import { ENCRYPTED_ENCODING } from '../../codec';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor } from '../helpers/run-inputs';
import { uniqueId } from '../helpers/temporal-env';
import { runResult } from '../helpers/run-result';

const MARKER = 'marker-c0dec-4e1f-plaintext';

/**
 * Every payload in a history with its path, wherever it sits, except search attributes
 * (indexed by the server, so plain by design) and the SDK's patch markers (their details are
 * the patch id, a name from the code, written by the SDK core without the codec).
 */
function payloadsOf(
  history: temporal.api.history.v1.IHistory,
): Array<[string, temporal.api.common.v1.IPayload]> {
  const out: Array<[string, temporal.api.common.v1.IPayload]> = [];
  const walk = (v: unknown, path: string): void => {
    if (!v || typeof v !== 'object' || v instanceof Uint8Array) return;
    if ((v as { metadata?: unknown }).metadata && 'data' in v)
      out.push([path, v as temporal.api.common.v1.IPayload]);
    for (const [k, child] of Object.entries(v)) {
      if (k === 'searchAttributes' || k === 'patch-data') continue;
      walk(child, `${path}.${k}`);
    }
  };
  walk(history, '');
  return out;
}

describe('a default run is encrypted end to end', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('keeps the marker out of the raw history while the run, its queries and AgentState filtering work', async () => {
    const workflowId = uniqueId('enc');
    const run = await h.start(
      live(
        [
          { tool: 'write_record', args: { id: `rec-${MARKER}`, body: `body ${MARKER}` } },
          { tool: 'complete_task', args: { summary: `done ${MARKER}` } },
        ],
        { goal: `goal ${MARKER}` },
      ),
      workflowId,
    );
    const result = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    expect(result.summary).toBe(`done ${MARKER}`); // the keyed client reads it
    expect(await h.counters(workflowId)).toMatchObject({ write_record: 1, complete_task: 1 });
    expect(JSON.stringify(await run.handle.query(statusQuery))).toContain(MARKER);

    // A client WITHOUT the codec: what the server, its history and the Web UI hold.
    const plain = new Client({ connection: h.env.connection, namespace: 'default' });
    const history = await plain.workflow.getHandle(workflowId).fetchHistory();
    const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
    expect(bytes.includes(MARKER)).toBe(false);
    expect(bytes.includes(Buffer.from(MARKER).toString('base64').slice(0, 16))).toBe(false);
    // Every payload (input, activity args and results, markers, user metadata, result) is encrypted.
    const payloads = payloadsOf(history);
    expect(payloads.length).toBeGreaterThan(8);
    const plainOnes = payloads.filter(
      ([, p]) => Buffer.from(p.metadata!.encoding!).toString() !== ENCRYPTED_ENCODING,
    );
    // The one exception: the SDK core's own bookkeeping of a local activity (the scripted plan
    // since issue 19) in its marker's `data` detail, written by core where no codec reaches:
    // sequence, attempt, activity type and times, never an argument or a result (`result` is encrypted).
    const coreMeta = plainOnes.filter(([path]) =>
      /markerRecordedEventAttributes\.details\.data\./.test(path),
    );
    for (const [, p] of coreMeta)
      expect(Object.keys(JSON.parse(Buffer.from(p.data!).toString()) as object).sort()).toEqual([
        'activity_id',
        'activity_type',
        'attempt',
        'backoff',
        'complete_time',
        'original_schedule_time',
        'seq',
      ]);
    expect(plainOnes.filter((x) => !coreMeta.includes(x)).map(([path]) => path)).toEqual([]);
    // ...so without the keys the result cannot be read...
    await expect(plain.workflow.getHandle(workflowId).result()).rejects.toThrow(/binary\/encrypted/);

    // ...but the search attributes are plain: filtering by AgentState needs no keys.
    const found = await waitFor(
      async () => {
        const ids: string[] = [];
        for await (const w of plain.workflow.list({
          query: `WorkflowId = '${workflowId}' AND AgentState = 'COMPLETED'`,
        }))
          ids.push(w.workflowId);
        return ids;
      },
      (ids) => ids.length === 1,
      15_000,
    );
    expect(found).toEqual([workflowId]);
  });
});
