/**
 * End to end on the real dev server: a write re-proposed by a second run is answered from
 * the ledger (SHA-256 args hash), and so is one whose record was written before the
 * upgrade (fingerprint as args hash). The world's notification count must stay at one.
 */
import { startHarness, type Harness } from '../helpers/run-harness';
import { live } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';

describe('args hash across runs', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  const notify = (channel: string) => ({
    tool: 'send_notification',
    args: { channel, incident: 'e2e', type: 'page', message: channel },
  });
  const sent = async (channel: string) =>
    (await h.deps.world.tx.all('SELECT message FROM world_notifications WHERE channel = ?', [channel]))
      .length;

  it('answers a write re-proposed in a second run from the ledger; the tool runs once', async () => {
    const first = await h.start(live([notify('twice')]));
    expect((await runResult(first)).decisions.map((d) => d.decision)).toEqual(['execute']);
    const key = 'notify:twice:e2e:page';
    expect((await h.deps.ledger.get(key))?.argsHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    const second = await h.start(live([notify('twice')]));
    expect((await runResult(second)).decisions.map((d) => d.decision)).toEqual(['return_cached_success']);
    expect(await sent('twice')).toBe(1);
    expect(await h.counters(second.workflowId)).toEqual({});
  });

  it('answers a write whose record was written before the upgrade (fingerprint as args hash)', async () => {
    const call = notify('legacy');
    const n = h.deps.registry.normalize(call.tool, call.args);
    const key = n.operationKey as string;
    const c = await h.deps.ledger.claim({
      key,
      tool: call.tool,
      argsHash: n.fingerprint,
      runId: 'pre-upgrade-run',
      owner: 'old-worker',
      leaseMs: 5_000,
    });
    if (c.kind !== 'claimed') throw new Error(c.kind);
    await h.deps.ledger.commit(key, c.token, { notified: true });
    const run = await h.start(live([call]));
    expect((await runResult(run)).decisions.map((d) => d.decision)).toEqual(['return_cached_success']);
    expect(await sent('legacy')).toBe(0);
  });
});
