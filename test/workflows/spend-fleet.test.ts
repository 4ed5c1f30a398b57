/**
 * A tenant's cap holds from outside, across workers (issue 18, "Done when"): eight concurrent
 * runs of one tenant on two workers sharing one PostgreSQL database, against a local Chat
 * Completions server (the real `openai` SDK) that bills fixed usage per request. The server's
 * own bill for the tenant never exceeds the cap, most of the cap is used, every run ends
 * NEEDS_HUMAN `spend_limit` with its checkpoint, and a run resumes after a raise of the cap.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resumeUpdate, statusQuery } from '../../common/contracts';
import { SpendStore } from '../../storage/spend';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { startHarness, type Harness } from '../helpers/run-harness';
import { waitFor } from '../helpers/run-inputs';
import { createTestDb, type TestDb } from '../ledger/helpers/backends';

const PROMPT = 2000;
const COMPLETION = 200;
/** gpt-4o-mini: $0.15 / $0.60 per million tokens. */
const PER_CALL_USD = (PROMPT * 0.15 + COMPLETION * 0.6) / 1e6;
const CAP = 0.05;
const RUNS = 8;
const LIMITS = { fleet: { maxUsd: CAP, windowMs: 3_600_000 } };

describe('a tenant spend limit across two workers on PostgreSQL', () => {
  let db: TestDb;
  let server: OpenAIServer;
  const workers: Harness[] = [];
  let store: SpendStore;

  beforeAll(async () => {
    db = await createTestDb('postgres');
    server = await startOpenAIServer((i) => ({
      tool_calls: [{ name: 'search', arguments: JSON.stringify({ query: `topic${i}` }) }],
      usage: { prompt_tokens: PROMPT, completion_tokens: COMPLETION },
    }));
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'local-openai': { provider: 'openai', baseURL: server.baseURL },
    });
    for (let w = 0; w < 2; w++) {
      const worldUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-world-')), 'world.db')}`;
      workers.push(await startHarness({ dbUrl: db.url, worldUrl, deps: () => ({ spendLimits: LIMITS }) }));
    }
    store = SpendStore.over(await db.open(), LIMITS);
  });
  afterAll(async () => {
    for (const h of workers) await h.close();
    await server?.close();
    await db?.cleanup();
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it("the server's bill stays within the cap, most of it is used, and a raise resumes a run", async () => {
    const runs = await Promise.all(
      Array.from({ length: RUNS }, (_, i) =>
        (workers[i % 2] as Harness).start({
          goal: 'research every topic',
          planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: COMPLETION, endpoint: 'local-openai' },
          guard: { steerLimit: 0, noProgressLimit: 1000, maxSteps: 1000 },
          tenant: 'fleet',
          resumeWindowMs: 120_000,
        }),
      ),
    );
    const stops = await Promise.all(
      runs.map((r) =>
        waitFor(
          () => r.handle.query(statusQuery),
          (s) => s.waitingForResume,
          110_000,
        ),
      ),
    );
    for (const s of stops)
      expect(s).toMatchObject({ terminalState: 'NEEDS_HUMAN', guardReason: 'spend_limit' });

    const billed = server.completionRequests().length * PER_CALL_USD;
    expect(billed).toBeLessThanOrEqual(CAP);
    // Most of the cap is used: the runs were not stopped needlessly early.
    expect(billed).toBeGreaterThanOrEqual(0.7 * CAP);
    const st = await store.status('fleet');
    expect(st.settledUsd).toBeCloseTo(billed, 10);
    expect(st.inFlightUsd).toBe(0);
    expect(st.calls.refused).toBeGreaterThanOrEqual(RUNS);
    // Every call the server billed, the guards counted.
    const guarded = stops.reduce((sum, s) => sum + s.usage.costUsd, 0);
    expect(guarded).toBeCloseTo(billed, 10);

    await store.raise({ tenant: 'fleet', maxUsd: CAP + 0.01, actor: 'ops', reason: 'more for one run' });
    const first = runs[0]!;
    const before = server.completionRequests().length;
    const answer = await first.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'cap raised', requestId: 'fleet-raise' }],
    });
    expect(answer.accepted).toBe(true);
    const again = await waitFor(
      () => first.handle.query(statusQuery),
      (s) => s.waitingForResume && s.executed > (stops[0]?.executed ?? 0),
      60_000,
    );
    expect(again.guardReason).toBe('spend_limit');
    expect(server.completionRequests().length).toBeGreaterThan(before);
    expect(server.completionRequests().length * PER_CALL_USD).toBeLessThanOrEqual(CAP + 0.01);
    await Promise.all(runs.map((r) => r.handle.terminate('test done')));
  });
});
