/**
 * A long script travels by reference (issue 32, workflows/script-ref.ts). Before, a plain
 * script rode whole in every continue-as-new input (a 3,000-call script: 213 KB per run of the
 * chain) and one above the payload limit could not start at all.
 *  - A live run of 200 distinct calls (~230 KB of script) continues as new several times; each
 *    continue-as-new input is small (the calls are in the payload store, only their reference
 *    travels), and every call runs exactly once (the demo world's counter).
 *  - A fixture script of 1.6 MB, above the 1.5 MB payload limit, is refused without a store;
 *    with the worker's payload store the client stores its calls and the run starts, playing
 *    every call once to its terminal result; `agentctl start --script` does the same with
 *    `LEDGER_URL` naming the worker's database.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Payload } from '@temporalio/common';
import { startRun } from '../../client/runs';
import type { RunInput } from '../../common/contracts';
import { jsonBytes, MAX_PAYLOAD_BYTES } from '../../common/payload-limits';
import { openLedger, type Ledger } from '../../storage/ledger';
import { PayloadStore } from '../../storage/payloads';
import { SCRIPT_REF_BYTES } from '../../workflows/script-ref';
import { fixture, live, search, type ScriptCall } from '../helpers/run-inputs';
import { startHarness, type Harness } from '../helpers/run-harness';
import { uniqueId } from '../helpers/temporal-env';
import { agentctl, cliEnv } from '../client/cli-helpers';
import { runResult } from '../helpers/run-result';

const unbounded = { maxSteps: 100_000, noProgressLimit: 100_000, maxMs: 3_600_000 };

/** 300 fixture calls of ~5.3 KB each and a terminal one: 1.6 MB, above the payload limit. */
function bigCalls(): ScriptCall[] {
  const calls: ScriptCall[] = Array.from({ length: 300 }, (_, i) => ({
    tool: 'pad',
    args: { i, blob: `${i}-${'y'.repeat(5_300)}` },
  }));
  calls.push({ tool: 'finish', result: { kind: 'SUCCESS', terminal: true } });
  return calls;
}

describe('a long script travels by reference (issue 32)', () => {
  let h: Harness;
  let ledger: Ledger;
  beforeAll(async () => {
    h = await startHarness();
    ledger = await openLedger(h.dbUrl);
  });
  afterAll(async () => {
    await ledger?.close();
    await h?.close();
  });

  /** A payload's JSON size once decoded (the codec may compress what it encrypts). */
  async function jsonSize(p: Payload): Promise<number> {
    let decoded = p;
    for (const codec of [...h.env.client.options.loadedDataConverter.payloadCodecs].reverse())
      decoded = (await codec.decode([decoded]))[0]!;
    return decoded.data!.length;
  }

  /** The run ids of a workflow's chain, first to last, with each one's history. */
  async function chainOf(workflowId: string, firstRunId: string) {
    const runs = [];
    for (let id: string | undefined = firstRunId; id;) {
      const hist = await h.env.client.workflow.getHandle(workflowId, id).fetchHistory();
      runs.push(hist);
      id =
        hist.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    }
    return runs;
  }

  it('a plain script of 200 distinct calls continues as new with a small input, every call run once', async () => {
    const calls: ScriptCall[] = Array.from({ length: 200 }, (_, i) => search(`q-${i}-${'x'.repeat(1_100)}`));
    calls.push({ tool: 'complete_task', args: { summary: 'all 200 read' } });
    const scriptBytes = jsonBytes(calls);
    expect(scriptBytes).toBeGreaterThan(220_000);
    const run = await h.start(live(calls, { maxHistoryEvents: 300, guard: unbounded }));
    const r = await runResult(run);
    expect(r).toMatchObject({ terminal_state: 'COMPLETED', executed: 201, cached: 0 });
    expect(await h.counters(run.workflowId)).toEqual({ search: 200, complete_task: 1 });

    const chain = await chainOf(run.workflowId, run.handle.firstExecutionRunId);
    expect(chain.length).toBeGreaterThanOrEqual(3);
    const started = chain[0]!.events![0]!.workflowExecutionStartedEventAttributes!;
    expect(await jsonSize(started.input!.payloads![0]! as Payload)).toBeGreaterThan(scriptBytes);
    const carried = await Promise.all(
      chain
        .slice(0, -1)
        .map((hist) =>
          jsonSize(
            hist.events!.at(-1)!.workflowExecutionContinuedAsNewEventAttributes!.input!
              .payloads![0]! as Payload,
          ),
        ),
    );
    // The checkpoint (bounded, issue 19) and the script's reference: not the 230 KB of calls.
    for (const bytes of carried) expect(bytes).toBeLessThan(64 * 1024);
    expect(Math.max(...carried)).toBeLessThan(scriptBytes / 3);
    // And no continue-as-new input above the reference threshold carries the calls inline.
    expect(SCRIPT_REF_BYTES).toBeLessThan(scriptBytes);
  });

  it('a script above the payload limit starts by reference from the client and plays every call once', async () => {
    const input: RunInput = fixture(bigCalls(), { guard: unbounded, maxHistoryEvents: 400 });
    expect(jsonBytes(input)).toBeGreaterThan(MAX_PAYLOAD_BYTES);
    const taskQueue = h.taskQueue;
    // Without the payload store the client refuses it, naming its size, as before.
    await expect(startRun(h.env.client, { workflowId: uniqueId('big'), taskQueue, input })).rejects.toThrow(
      /above the 1500000-byte payload limit/,
    );
    const workflowId = uniqueId('big');
    const handle = await startRun(h.env.client, {
      workflowId,
      taskQueue,
      input,
      payloads: PayloadStore.over(ledger),
    });
    const r = await runResult(handle);
    expect(r).toMatchObject({ terminal_state: 'COMPLETED', executed: 301, cached: 0 });
    expect(r.decisions.map((d: { index: number }) => d.index)).toEqual(
      Array.from({ length: 301 }, (_, i) => i),
    );
    const chain = await chainOf(workflowId, handle.firstExecutionRunId);
    expect(chain.length).toBeGreaterThanOrEqual(2);
    const started = chain[0]!.events![0]!.workflowExecutionStartedEventAttributes!;
    expect(started.input!.payloads![0]!.data!.length).toBeLessThan(16 * 1024);
    expect(await PayloadStore.over(ledger).stats(workflowId)).toMatchObject({ rows: 1 });
  });

  it('agentctl start --script with a file above the payload limit starts it through LEDGER_URL', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'big-script-')), 'big.json');
    writeFileSync(file, JSON.stringify({ config: unbounded, calls: bigCalls() }));
    const id = uniqueId('ctl-big');
    const r = await agentctl(['start', '--script', file, '--id', id, '--wait', '--json'], cliEnv(h), 180_000);
    expect(r.stderr).not.toMatch(/payload limit/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ terminal_state: 'COMPLETED', executed: 301, cached: 0 });
    expect(await PayloadStore.over(ledger).stats(id)).toMatchObject({ rows: 1 });
  });
});
