import { runInputSchema } from '../../common/contracts';
import { buildRunInput } from '../../client/commands/start';

describe('agentctl start builds a valid run input', () => {
  it('passes LLM planner settings and budgets through, and the workflow schema accepts them', () => {
    const input = buildRunInput({
      planner: 'openai',
      goal: 'summarise the incident',
      model: 'llama3.1',
      baseUrl: 'http://127.0.0.1:11434/v1',
      system: 'Be brief.',
      maxSteps: 7,
      maxCostUsd: 0.5,
      timeout: 300,
    });
    const parsed = runInputSchema.parse(input);
    expect(parsed.planner).toEqual({
      kind: 'openai',
      model: 'llama3.1',
      baseURL: 'http://127.0.0.1:11434/v1',
      system: 'Be brief.',
      maxTokens: 1024,
    });
    expect(parsed.guard).toMatchObject({ maxSteps: 7, maxCostUsd: 0.5 });
  });

  it('refuses an LLM planner without a goal (exit 2)', () => {
    expect(() => buildRunInput({ planner: 'anthropic', timeout: 300 })).toThrow(/needs --goal/);
  });
});
