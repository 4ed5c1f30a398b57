/**
 * One request policy across the plan activity's attempts (issue 40), through the official
 * OpenAI SDK against local Chat Completions servers: what earlier attempts of the turn did (the
 * served-usage rows, here a recorder in memory) decides what this attempt sends; a larger-limit
 * ask waits for an attempt with time for it; no request outlives its attempt; a turn's requests
 * are bounded. Each request is recorded before it is sent and when it ends.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PlannerInput, ServedRequestEnd, ServedUsageAccess } from '../../common/planner';
import { createOpenAIPlanner } from '../../planners/openai';
import { PlannerTimeoutError, TurnRequestBoundError, UnreadableReplyError } from '../../planners/errors';
import { MAX_TURN_REQUESTS } from '../../planners/turn-policy';
import { turnInput } from './helpers';
import { startOpenAIServer } from '../../testing/openai-server';
import type { RunningServer } from '../../testing/http-script';

type Earlier = Awaited<ReturnType<ServedUsageAccess['earlier']>>;

/** The turn's rows in memory: what earlier attempts did, and what this one records. */
function recorder(earlier: Earlier = { requests: 0, lastReply: null }) {
  const rows: Array<{ maxTokens: number; worstTokens: number; end?: ServedRequestEnd }> = [];
  const access: ServedUsageAccess = {
    earlier: async () => earlier,
    sent: async (worst, maxTokens) => {
      rows.push({ maxTokens, worstTokens: worst.tokens });
      return String(rows.length - 1);
    },
    ended: async (id, end) => {
      rows[Number(id)]!.end = end;
    },
  };
  return { access, rows };
}

const SPEC = { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 100 } as const;
const servers: RunningServer[] = [];
const raw: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const s of raw.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A server that answers each request after `ms` (cut off at its limit when `cut`). */
async function slowServer(ms: number, cut: boolean): Promise<{ baseURL: string; limits: number[] }> {
  const limits: number[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const b = JSON.parse(body) as { max_tokens?: number; max_completion_tokens?: number };
      limits.push(b.max_completion_tokens ?? b.max_tokens ?? 0);
      setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'c',
            object: 'chat.completion',
            created: 1,
            model: 'gpt-4o-mini',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: 'x' },
                finish_reason: cut ? 'length' : 'stop',
              },
            ],
            usage: { prompt_tokens: 50, completion_tokens: 100, total_tokens: 150 },
          }),
        );
      }, ms).unref();
    });
  });
  raw.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, limits };
}

function planner(baseURL: string) {
  return createOpenAIPlanner({ env: { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: baseURL }, warn: jest.fn() });
}

const input = (extra: Partial<PlannerInput>): PlannerInput => ({ ...turnInput(SPEC, null), ...extra });

describe('one request policy across attempts', () => {
  it('a reply an earlier attempt got cut at the spec limit is asked with twice the limit directly', async () => {
    const server = await startOpenAIServer([{ content: 'done' }]);
    servers.push(server);
    const r = recorder({ requests: 1, lastReply: { finish: 'truncated', maxTokens: 100, elapsedMs: 900 } });
    const out = await planner(server.baseURL).next(input({ served: r.access }));
    expect(out.turn).toMatchObject({ type: 'finish', ended: 'text' });
    expect(server.completionRequests().map((b) => b.max_completion_tokens ?? b.max_tokens)).toEqual([200]);
    expect(r.rows.map((x) => [x.maxTokens, x.end?.state, x.end?.basis, x.end?.usage.tokens])).toEqual([
      [200, 'answered', 'reported', 15],
    ]);
  });

  it('cut at the larger limit too, or unreadable, or at the bound: the turn ends without sending anything', async () => {
    const server = await startOpenAIServer([{ content: 'never' }]);
    servers.push(server);
    const p = planner(server.baseURL);
    const cut = recorder({ requests: 2, lastReply: { finish: 'truncated', maxTokens: 200, elapsedMs: 900 } });
    expect((await p.next(input({ served: cut.access }))).turn).toMatchObject({
      type: 'finish',
      ended: 'truncated',
    });
    const unreadable = recorder({
      requests: 1,
      lastReply: { finish: 'unreadable', maxTokens: 100, elapsedMs: 9 },
    });
    await expect(p.next(input({ served: unreadable.access }))).rejects.toThrow(UnreadableReplyError);
    const bound = recorder({ requests: MAX_TURN_REQUESTS, lastReply: null });
    await expect(p.next(input({ served: bound.access }))).rejects.toThrow(TurnRequestBoundError);
    expect(server.completionRequests()).toHaveLength(0);
  });

  it('asks again with the larger limit only when the attempt has time for it; the cut reply is recorded', async () => {
    const slow = await slowServer(300, true);
    const r = recorder();
    const err = await planner(slow.baseURL)
      .next(input({ served: r.access, deadlineMs: Date.now() + 2000 }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlannerTimeoutError);
    expect((err as Error).message).toMatch(/the next attempt asks with 200 directly/);
    expect(slow.limits).toEqual([100]);
    expect(r.rows.map((x) => [x.end?.state, x.end?.finish, x.end?.usage.tokens])).toEqual([
      ['answered', 'truncated', 150],
    ]);
  });

  it('no request outlives its attempt: given up before the deadline, recorded at its worst case (never zero)', async () => {
    const slow = await slowServer(5000, false);
    const r = recorder();
    const started = Date.now();
    const err = await planner(slow.baseURL)
      .next(input({ served: r.access, deadlineMs: Date.now() + 2500 }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlannerTimeoutError);
    expect((err as Error).message).toMatch(/given up at the end of the plan attempt/);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(r.rows).toHaveLength(1);
    expect(r.rows[0]!.end).toMatchObject({ state: 'failed', basis: 'unanswered' });
    expect(r.rows[0]!.end!.usage.tokens).toBe(r.rows[0]!.worstTokens);
    expect(r.rows[0]!.worstTokens).toBeGreaterThan(100);
  });
});
