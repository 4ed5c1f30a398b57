/**
 * Tool errors go to the model (issue 29): in a durable LLM run, a tool that throws a plain
 * `Error` does not end the run FATAL `tool_error`; the model reads the error (cut, redacted) as
 * PRECONDITION `tool_error`, changes its args and completes. The same failing call repeated
 * identically is steered, then stopped `precondition_unchanged`, the tool run once. A scripted
 * run keeps today's meaning (FATAL `tool_error`, FAILED). Assertions are the tools' counters.
 */
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { traceQuery, type RunResult } from '../../common/contracts';
import { defineTool } from '../../tools/define-tool';
import { FatalToolError } from '../../tools/errors';
import { MAX_TOOL_ERROR_CHARS } from '../../tools/tool-errors';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import type { RecordedRequest } from '../../testing/http-script';
import { startHarness, type Harness } from '../helpers/run-harness';
import { fixture, live } from '../helpers/run-inputs';
import { parseReplayFile, replay } from '../../guard';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'TOOL_ERRORS_LLM_KEY';
const PLANNER = { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'errs-recover' } as const;
/** A secret the redaction rules know (a Stripe live key), inside a huge error message. */
const SECRET = 'sk_live_0123456789abcdefABCDEF';
const HUGE = `seat 2B is taken (${SECRET}) ${'x'.repeat(200_000)}`;

const book = (seat: string) => ({ name: 'book_seat', arguments: JSON.stringify({ flight: 'AA1', seat }) });
/** The tool messages the model was sent. */
const toolMessages = (req: RecordedRequest): string[] =>
  ((req.body as { messages?: Array<{ role: string; content?: unknown }> }).messages ?? [])
    .filter((m) => m.role === 'tool')
    .map((m) => String(m.content));

describe('tool errors go to the model (durable, OpenAI protocol)', () => {
  let h: Harness;
  let recovering: OpenAIServer;
  let stubborn: OpenAIServer;
  const booked: string[] = [];

  const bookSeat = defineTool({
    name: 'book_seat',
    description: 'Book a seat on a flight.',
    effect: 'write',
    schema: z.object({ flight: z.string(), seat: z.string() }).strict(),
    operationKey: (a) => `book:${a.flight}:${a.seat}`,
    async execute(a, ctx) {
      if (a.seat === '1A') throw new Error('seat 1A is not available');
      if (a.seat === '2B') throw new Error(HUGE);
      if (a.seat === '9Z') throw new FatalToolError('flight AA1 is cancelled', 'flight_cancelled');
      booked.push(a.seat);
      // A booking changes the world: the harness's progress source (the demo world) moves.
      await h.deps.world.bump(ctx.tx);
      return { data: { booked: a.seat } };
    },
  });

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-tool-errors';
    // Reads each error and tries another seat: 1A (error), 2B (huge error), 3C (booked), done.
    recovering = await startOpenAIServer((_i, req) => {
      const seen = toolMessages(req);
      if (seen.length === 0) return { tool_calls: [book('1A')] };
      if (seen.length === 1) return { tool_calls: [book('2B')] };
      if (seen.length === 2) return { tool_calls: [book('3C')] };
      return { tool_calls: [{ name: 'complete_task', arguments: '{"summary":"booked 3C"}' }] };
    });
    // Retries the failing call exactly as it was, whatever it is told.
    stubborn = await startOpenAIServer(() => ({ tool_calls: [book('1A')] }));
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'errs-recover': { provider: 'openai', baseURL: recovering.baseURL, apiKeyEnv: KEY_ENV },
      'errs-stubborn': { provider: 'openai', baseURL: stubborn.baseURL, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness({ tools: [bookSeat] });
  });
  afterAll(async () => {
    await h?.close();
    await recovering?.close();
    await stubborn?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('a plain Error twice, then other args: the model reads each error and the run COMPLETES, book_seat 3', async () => {
    const before = recovering.completionRequests().length;
    const run = await h.start({ goal: 'book a seat on AA1', planner: PLANNER, resumeWindowMs: 500 });
    const result: RunResult = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    expect(await h.counters(run.workflowId)).toEqual({ book_seat: 3, complete_task: 1 });
    expect(booked).toEqual(['3C']);
    expect(result.decisions.map((d) => d.after)).toEqual([
      'needs_changed_precondition',
      'needs_changed_precondition',
      'continue',
      'complete',
    ]);
    // The model was told each error as PRECONDITION tool_error, the huge one cut and redacted.
    const sent = recovering
      .completionRequests()
      .slice(before)
      .map((b) => JSON.stringify(b));
    const last = recovering.requests[recovering.requests.length - 1]!;
    const tools = toolMessages(last);
    expect(tools[0]).toContain('"kind":"PRECONDITION"');
    expect(tools[0]).toContain('"code":"tool_error"');
    expect(tools[0]).toContain('seat 1A is not available');
    expect(tools[1]).toContain('seat 2B is taken');
    expect(tools[1]).toContain('[REDACTED]');
    expect(tools[1]!.length).toBeLessThan(MAX_TOOL_ERROR_CHARS + 200);
    expect(sent.join('\n')).not.toContain(SECRET);
    // Neither the trace nor the history holds the secret or the whole message.
    const trace = await run.handle.query(traceQuery, { limit: 1000 });
    expect(JSON.stringify(trace)).not.toContain(SECRET);
    const history = await run.handle.fetchHistory();
    const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
    expect(bytes.includes(Buffer.from(SECRET))).toBe(false);
    expect(bytes.includes(Buffer.from('x'.repeat(5000)))).toBe(false);
  });

  it('the same failing call repeated identically: steered twice, then stopped precondition_unchanged, book_seat 1', async () => {
    const run = await h.start({
      goal: 'book seat 1A',
      planner: { ...PLANNER, endpoint: 'errs-stubborn' },
      resumeWindowMs: 500,
    });
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'precondition_unchanged' });
    expect(result.decisions.map((d) => d.decision)).toEqual(['execute', 'steer', 'steer', 'stop']);
    expect(result.report?.steers?.map((s) => s.reason)).toEqual([
      'precondition_unchanged',
      'precondition_unchanged',
    ]);
    // The tool ran once: the repeats never reached it.
    expect(await h.counters(run.workflowId)).toEqual({ book_seat: 1 });
    // A fresh LLM run decides at the llm profile (guard/profiles.ts), failure memory on.
    expect(result.checkpoint?.guard.config).toEqual({
      maxSteps: 50,
      maxMs: 1_200_000,
      sameCallLimit: 2,
      noProgressLimit: 3,
      noProgressGrace: 3,
      maxWaitPolls: 10,
      maxTokens: 2_000_000,
      maxCostUsd: 10,
      steerLimit: 2,
      keepFailures: true,
    });
  });

  it('a FatalToolError stays FATAL in an LLM run: FAILED with its code, the tool run once', async () => {
    const fatal = await startOpenAIServer(() => ({ tool_calls: [book('9Z')] }));
    try {
      process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
        ...JSON.parse(process.env.AGENT_MODEL_ENDPOINTS ?? '{}'),
        'errs-fatal': { provider: 'openai', baseURL: fatal.baseURL, apiKeyEnv: KEY_ENV },
      });
      const run = await h.start({
        goal: 'book seat 9Z',
        planner: { ...PLANNER, endpoint: 'errs-fatal' },
        resumeWindowMs: 500,
      });
      const result: RunResult = await runResult(run);
      expect(result).toMatchObject({ terminal_state: 'FAILED', reason: 'flight_cancelled' });
      expect(await h.counters(run.workflowId)).toEqual({ book_seat: 1 });
    } finally {
      await fatal.close();
    }
  });

  it('a fixture script at "profile": "llm" decides as the replay at the llm profile: the error goes to the model', async () => {
    const error = { kind: 'FATAL', code: 'tool_error', message: 'not enough seats' } as const;
    const calls = [
      { tool: 'book', args: { seat: '1A' }, result: error },
      { tool: 'book', args: { seat: '1A' }, result: error },
      { tool: 'book', args: { seat: '2B' }, result: { kind: 'SUCCESS', terminal: true } as const },
    ];
    const run = await h.start(fixture(calls, {}, { profile: 'llm' }));
    const result: RunResult = await runResult(run);
    const offline = replay(parseReplayFile({ profile: 'llm', calls }));
    expect(result.terminal_state).toBe('COMPLETED');
    expect(offline.terminal_state).toBe('COMPLETED');
    expect(result.decisions).toEqual(offline.decisions);
  });

  it('a scripted run keeps its meaning: a plain Error is FATAL tool_error, FAILED, the tool run once', async () => {
    const run = await h.start(
      live([
        { tool: 'book_seat', args: { flight: 'AA1', seat: '1A' } },
        { tool: 'book_seat', args: { flight: 'AA1', seat: '3D' } },
      ]),
    );
    const result: RunResult = await runResult(run);
    // As before issue 29: the ledger keeps the write's failure final.
    expect(result).toMatchObject({ terminal_state: 'FAILED', reason: 'failed_final' });
    expect(await h.counters(run.workflowId)).toEqual({ book_seat: 1 });
  });
});
