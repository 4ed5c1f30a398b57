/**
 * Money is checked before a model call (issue 18), in durable runs driven by the real
 * `openai` SDK against a local Chat Completions server that bills fixed usage per request:
 * - a run's `maxCostUsd` / `maxTokens`: the next call's worst case must fit what is left, so
 *   the server's own bill never exceeds the budget; the stop is the usual budget stop,
 *   resumable with a raise;
 * - a tenant's spend limit (`spendLimits` / `AGENT_SPEND_LIMITS`): the run stops NEEDS_HUMAN
 *   `spend_limit` with its checkpoint, its resume is refused until the window has room, and
 *   accepted after an operator's raise of the tenant's cap;
 * - a model without a price under a tenant cap is refused before the call.
 */
import { reportQuery, resumeUpdate, statusQuery } from '../../common/contracts';
import { SpendStore } from '../../storage/spend';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { startHarness, type Harness } from '../helpers/run-harness';
import { waitFor } from '../helpers/run-inputs';

/** gpt-4o-mini list price: $0.15 / $0.60 per million tokens; the server bills 2,000 in + 200 out. */
const PROMPT = 2000;
const COMPLETION = 200;
const PER_CALL_USD = (PROMPT * 0.15 + COMPLETION * 0.6) / 1e6;
const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];
const planner = (model = 'gpt-4o-mini') =>
  ({ kind: 'openai', model, maxTokens: COMPLETION, endpoint: 'local-openai' }) as const;
/** Only the budgets under test stop these runs. */
const LOOSE = { steerLimit: 0, noProgressLimit: 500, maxSteps: 500, sameCallLimit: 50 };

describe('money is checked before each model call', () => {
  let h: Harness;
  let server: OpenAIServer;
  let store: SpendStore;
  const requests = () => server.completionRequests().length;

  beforeAll(async () => {
    // A model that never finishes: each reply searches for another word.
    server = await startOpenAIServer((i) => ({
      tool_calls: [
        { name: 'search', arguments: JSON.stringify({ query: `${WORDS[i % WORDS.length]}${i}` }) },
      ],
      usage: { prompt_tokens: PROMPT, completion_tokens: COMPLETION },
    }));
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'local-openai': { provider: 'openai', baseURL: server.baseURL },
    });
    h = await startHarness({
      deps: (d) => {
        store = SpendStore.over(d.ledger, { acme: { maxUsd: 0.004, windowMs: 3_600_000 } });
        return { spend: store };
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    await server?.close();
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('maxCostUsd: the server never bills more than the budget; the stop is cost_budget, resumable with a raise', async () => {
    const before = requests();
    const maxCostUsd = 0.005;
    const run = await h.start({
      goal: 'research every word',
      planner: planner(),
      guard: { ...LOOSE, maxCostUsd },
      resumeWindowMs: 60_000,
    });
    const stopped = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
      60_000,
    );
    expect(stopped).toMatchObject({ terminalState: 'STOPPED_LOOP_GUARD', guardReason: 'cost_budget' });
    const calls = requests() - before;
    expect(calls).toBeGreaterThanOrEqual(3);
    // The last request was the final word (tool use off), in the room the run kept for it (issue 30).
    expect(server.completionRequests()[requests() - 1]).toMatchObject({
      tool_choice: 'none',
      max_tokens: 256,
    });
    // The server's own bill, the final word's included, is within the budget, and the guard
    // counted every call it billed.
    expect(calls * PER_CALL_USD).toBeLessThanOrEqual(maxCostUsd);
    expect(stopped.usage.costUsd).toBeCloseTo(calls * PER_CALL_USD, 10);
    // After rule 3 alone the run would have gone on until it was over the budget.
    const searches = calls - 1;
    expect((searches + 1) * PER_CALL_USD).toBeLessThanOrEqual(maxCostUsd);
    expect((await run.handle.query(reportQuery))?.unmet_precondition).toMatch(/the model was not called/);
    // The final word's reply proposed a search too: ignored, nothing ran.
    expect(await h.counters(run.workflowId)).toEqual({ search: searches });

    const answer = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'more budget', requestId: 'raise-cost', raise: { maxCostUsd: 0.01 } }],
    });
    expect(answer.accepted).toBe(true);
    const again = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume && s.usage.costUsd > stopped.usage.costUsd,
      60_000,
    );
    expect(again.guardReason).toBe('cost_budget');
    expect((requests() - before) * PER_CALL_USD).toBeLessThanOrEqual(0.01);
    await run.handle.terminate('test done');
  });

  it('maxTokens: the next call must fit the tokens left; the stop is token_budget', async () => {
    const before = requests();
    const maxTokens = 30_000;
    const run = await h.start({
      goal: 'research every word',
      planner: planner(),
      guard: { ...LOOSE, maxTokens },
      resumeWindowMs: 60_000,
    });
    const stopped = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
      60_000,
    );
    expect(stopped).toMatchObject({ terminalState: 'STOPPED_LOOP_GUARD', guardReason: 'token_budget' });
    const calls = requests() - before;
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(calls * (PROMPT + COMPLETION)).toBeLessThanOrEqual(maxTokens);
    expect(stopped.usage.tokens).toBe(calls * (PROMPT + COMPLETION));
    await run.handle.terminate('test done');
  });

  it("a tenant's cap: the run stops NEEDS_HUMAN spend_limit; its resume waits for room, and an operator's raise gives it", async () => {
    const before = requests();
    const run = await h.start({
      goal: 'research every word',
      planner: planner(),
      guard: LOOSE,
      tenant: 'acme',
      resumeWindowMs: 60_000,
    });
    const stopped = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
      60_000,
    );
    expect(stopped).toMatchObject({ terminalState: 'NEEDS_HUMAN', guardReason: 'spend_limit' });
    const calls = requests() - before;
    expect(calls).toBeGreaterThanOrEqual(2);
    // The server's bill for the tenant is within its cap, and the store settled exactly that.
    expect(calls * PER_CALL_USD).toBeLessThanOrEqual(0.004);
    const st = await store.status('acme');
    expect(st.settledUsd).toBeCloseTo(calls * PER_CALL_USD, 10);
    expect(st).toMatchObject({ inFlightUsd: 0, calls: { settled: calls, inFlight: 0, refused: 1 } });
    expect((await run.handle.query(reportQuery))?.unmet_precondition).toMatch(/tenant "acme" has used/);

    // No room yet: the resume is refused and nothing is sent.
    const refused = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'try again', requestId: 'spend-1' }],
    });
    expect(refused).toMatchObject({ accepted: false });
    expect(refused.reason).toMatch(/raise the cap/);
    expect(requests() - before).toBe(calls);

    await store.raise({ tenant: 'acme', maxUsd: 0.008, actor: 'ops', reason: 'quarter end' });
    const accepted = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'cap raised', requestId: 'spend-2' }],
    });
    expect(accepted.accepted).toBe(true);
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume && s.executed > calls,
      60_000,
    );
    expect(requests() - before).toBeGreaterThan(calls);
    expect((requests() - before) * PER_CALL_USD).toBeLessThanOrEqual(0.008);
    await run.handle.terminate('test done');
  });

  it('a model without a price under a tenant cap is refused before the call (NEEDS_HUMAN, not FAILED)', async () => {
    const before = requests();
    const run = await h.start({
      goal: 'research',
      planner: planner('local-llama-3'),
      guard: LOOSE,
      tenant: 'acme',
      resumeWindowMs: 60_000,
    });
    const stopped = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
      60_000,
    );
    expect(stopped).toMatchObject({ terminalState: 'NEEDS_HUMAN', guardReason: 'spend_limit', executed: 0 });
    expect((await run.handle.query(reportQuery))?.unmet_precondition).toMatch(
      /model "local-llama-3" has no price.*AGENT_PRICE_TABLE/,
    );
    expect(requests()).toBe(before);
    await run.handle.terminate('test done');
  });
});
