import { planTimeouts, runInputSchema } from '../../common/contracts';
import { buildRunInput, formatOutcome } from '../../client/commands/start';
import { howItEnded, outcomeOfResult } from '../../client/runs';
import type { RunResult } from '../../common/contracts';
import { nonNegativeInt } from '../../client/commands/common';

describe('agentctl start builds a valid run input', () => {
  it('passes LLM planner settings and budgets through, and the workflow schema accepts them', () => {
    const input = buildRunInput({
      planner: 'openai',
      goal: 'summarise the incident',
      model: 'llama3.1',
      endpoint: 'local-ollama',
      system: 'Be brief.',
      maxSteps: 7,
      maxCostUsd: 0.5,
      timeout: 300,
    });
    const parsed = runInputSchema.parse(input);
    expect(parsed.planner).toEqual({
      kind: 'openai',
      model: 'llama3.1',
      endpoint: 'local-ollama',
      system: 'Be brief.',
      maxTokens: 1024,
    });
    expect(parsed.guard).toMatchObject({ maxSteps: 7, maxCostUsd: 0.5 });
  });

  it('--conversation [--idle-timeout s] starts a conversation (issue 33); --idle-timeout alone is bad input', () => {
    const plain = runInputSchema.parse(
      buildRunInput({ planner: 'openai', goal: 'g', conversation: true, timeout: 300 }),
    );
    expect(plain.conversation).toEqual({ idleTimeoutMs: 86_400_000, maxMessageChars: 4000, queueLimit: 10 });
    const idle = buildRunInput({
      planner: 'openai',
      goal: 'g',
      conversation: true,
      idleTimeout: 90,
      timeout: 300,
    });
    expect(runInputSchema.parse(idle).conversation).toMatchObject({ idleTimeoutMs: 90_000 });
    expect(() => buildRunInput({ planner: 'openai', goal: 'g', idleTimeout: 90, timeout: 300 })).toThrow(
      /--idle-timeout goes with --conversation/,
    );
    expect(
      runInputSchema.parse(buildRunInput({ planner: 'openai', goal: 'g', timeout: 300 })).conversation,
    ).toBe(undefined);
    expect(() =>
      buildRunInput({ planner: 'openai', goal: 'g', conversation: true, idleTimeout: 0.1, timeout: 300 }),
    ).toThrow(/idleTimeoutMs must be at least 1000/);
  });

  it('--planner-timeout, --max-output-tokens and --text-reply-limit set one request policy (issue 30)', () => {
    const input = buildRunInput({
      planner: 'openai',
      goal: 'g',
      plannerTimeout: 600,
      maxOutputTokens: 4096,
      textReplyLimit: 0,
      timeout: 300,
    });
    const parsed = runInputSchema.parse(input);
    expect(parsed.planner).toMatchObject({ maxTokens: 4096 });
    expect(parsed.timeouts).toMatchObject({ plannerRequestMs: 600_000, plannerStartToCloseMs: 120_000 });
    expect(parsed.textReplyLimit).toBe(0);
    expect(planTimeouts(parsed.timeouts)).toEqual({ requestMs: 600_000, startToCloseMs: 610_000 });
    // The default: the SDK's timeout inside the activity's 120 s.
    expect(planTimeouts({ plannerStartToCloseMs: 120_000 })).toEqual({
      requestMs: 110_000,
      startToCloseMs: 120_000,
    });
    // Bad values: a clear error naming the field, from the CLI and from the client API alike.
    expect(() => buildRunInput({ planner: 'openai', goal: 'g', plannerTimeout: 7200, timeout: 300 })).toThrow(
      /timeouts\.plannerRequestMs must be at most 3600000/,
    );
    expect(runInputSchema.safeParse({ ...input, textReplyLimit: -1 }).error?.issues[0]?.message).toBe(
      'textReplyLimit must be 0 or more',
    );
    expect(
      runInputSchema.safeParse({ ...input, timeouts: { plannerRequestMs: 1.5 } }).error?.issues[0]?.message,
    ).toMatch(/whole number of milliseconds/);
    expect(() =>
      buildRunInput({ planner: 'scripted', script: 'x.json', maxOutputTokens: 10, timeout: 300 }),
    ).toThrow(/for the LLM planners/);
  });

  it('start --wait says how the run ended: the task declared done, or the model stopped talking', () => {
    expect(howItEnded('COMPLETED', null)).toMatchObject({ finished_task: true });
    expect(howItEnded('PARTIAL', 'model_stopped')).toEqual({
      finished_task: false,
      ended: 'the model stopped talking without finishing the task (it never called the finishing tool)',
    });
    const result = {
      workflow_id: 'w',
      terminal_state: 'PARTIAL',
      reason: 'model_stopped',
      executed: 0,
      cached: 0,
      stopped_at: null,
      decisions: [],
      report: null,
      summary: 'I am not able to continue.',
      final_message: 'I am not able to continue.',
      checkpoint: null,
    } as unknown as RunResult;
    const outcome = outcomeOfResult(result);
    expect(outcome).toMatchObject({ finished_task: false, final_message: 'I am not able to continue.' });
    const text = formatOutcome('w', outcome, {}, 'http://ui');
    expect(text).toMatch(/ended +the model stopped talking without finishing the task/);
    expect(text).toMatch(/final message +I am not able to continue\./);
  });

  it('has no way to send a URL: a run input with planner.baseURL is refused naming the field', () => {
    const input = buildRunInput({ planner: 'openai', goal: 'g', endpoint: 'local-ollama', timeout: 300 });
    const withUrl = { ...input, planner: { ...input.planner, baseURL: 'http://attacker.example/v1' } };
    const parsed = runInputSchema.safeParse(withUrl);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toMatch(
      /planner\.baseURL is not accepted.*planner\.endpoint.*configured on the worker/,
    );
    expect(() =>
      buildRunInput({ planner: 'openai', goal: 'g', endpoint: 'http://x/v1', timeout: 300 }),
    ).toThrow(/planner\.endpoint: .*name of an endpoint configured on the worker/);
  });

  it('--context-tokens becomes planner.contextTokens (LLM planners only)', () => {
    const input = buildRunInput({ planner: 'openai', goal: 'g', contextTokens: 100_000, timeout: 300 });
    expect(runInputSchema.parse(input).planner).toMatchObject({ kind: 'openai', contextTokens: 100_000 });
    expect(() =>
      buildRunInput({ planner: 'scripted', script: 'x.json', contextTokens: 100_000, timeout: 300 }),
    ).toThrow(/--context-tokens is for the LLM planners/);
  });

  it('--steer-limit N becomes guard.steerLimit; a negative or fractional one is refused at parse', () => {
    const input = buildRunInput({ planner: 'openai', goal: 'g', steerLimit: 0, timeout: 300 });
    expect(input.guard).toEqual({ steerLimit: 0 });
    expect(nonNegativeInt('3')).toBe(3);
    for (const bad of ['-1', '1.5', 'two']) expect(() => nonNegativeInt(bad)).toThrow(/non-negative integer/);
    expect(() => buildRunInput({ planner: 'openai', goal: 'g', steerLimit: -1, timeout: 300 })).toThrow(
      /steerLimit/,
    );
  });

  it('--planner ai-sdk takes --endpoint and --model, both required (exit 2 naming them)', () => {
    const input = buildRunInput({
      planner: 'ai-sdk',
      goal: 'g',
      endpoint: 'local-vllm',
      model: 'qwen2.5-7b',
      contextTokens: 32_768,
      timeout: 300,
    });
    expect(runInputSchema.parse(input).planner).toEqual({
      kind: 'ai-sdk',
      endpoint: 'local-vllm',
      model: 'qwen2.5-7b',
      maxTokens: 1024,
      contextTokens: 32_768,
    });
    for (const missing of [{ model: 'm' }, { endpoint: 'e' }]) {
      expect(() => buildRunInput({ planner: 'ai-sdk', goal: 'g', timeout: 300, ...missing })).toThrow(
        /--planner ai-sdk needs --endpoint NAME .* and --model NAME/,
      );
    }
  });

  it('refuses an LLM planner without a goal (exit 2)', () => {
    expect(() => buildRunInput({ planner: 'anthropic', timeout: 300 })).toThrow(/needs --goal/);
  });
});
