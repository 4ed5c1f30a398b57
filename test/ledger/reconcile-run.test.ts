/**
 * End to end on the real dev server: an agentRun's write whose earlier attempt dispatched it and
 * died (DISPATCHED, lease expired: what a SIGKILLed worker leaves) is settled by the tool's
 * `reconcile` probe. The tool does not run again, and the run says so in its own word: counted
 * `reconciled`, not `executed`, and its trace's after-record carries `via: 'reconciled'`.
 */
import { z } from 'zod';
import { traceQuery } from '../../common/contracts';
import { defineTool } from '../../tools/define-tool';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';

let faxes = 0;
const sendFax = defineTool({
  name: 'send_fax',
  description: 'Send a fax (the vendor can be asked whether one went out).',
  effect: 'write',
  schema: z.object({ to: z.string(), text: z.string() }).strict(),
  operationKey: (a) => `fax:${a.to}:${a.text}`,
  reconcile: async () => ({ status: 'succeeded', result: { faxId: 'fx-1', via: 'vendor-lookup' } }),
  async execute() {
    faxes += 1;
    return { data: { faxId: 'fx-2' } };
  },
});

describe('a write settled by reconcile in an agentRun', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ tools: [sendFax] });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is counted reconciled, not executed, and its trace says reconciled; the tool did not run', async () => {
    const call = { tool: 'send_fax', args: { to: '+100', text: 'invoice' } };
    const n = h.deps.registry.normalize(call.tool, call.args);
    const key = n.operationKey as string;
    const c = await h.deps.ledger.claim({
      key,
      tool: call.tool,
      argsHash: n.argsHash,
      runId: 'dead-run',
      owner: 'dead-worker',
      leaseMs: 30,
    });
    if (c.kind !== 'claimed') throw new Error(c.kind);
    await h.deps.ledger.dispatch(key, c.token);
    await new Promise((r) => setTimeout(r, 80));

    const run = await h.start(live([call]));
    const result = await runResult(run);
    expect(faxes).toBe(0);
    // PARTIAL: the script ends without the finishing tool.
    expect(result).toMatchObject({ terminal_state: 'PARTIAL', executed: 0, reconciled: 1 });
    const records = (await run.handle.query(traceQuery)).records.filter((r) => r.tool === 'send_fax');
    expect(records.map((r) => [r.phase, r.decision, r.result_kind, r.via ?? null])).toEqual([
      ['before', 'execute', null, null],
      ['after', 'continue', 'SUCCESS', 'reconciled'],
    ]);
    expect((await h.deps.ledger.get(key))?.state).toBe('SUCCEEDED');
    // The runtime's counters count real executions only.
    expect(await h.counters(run.workflowId)).toEqual({});
  });
});
