/**
 * agent-loop-guard/ai-sdk bad input (issue 34): each wrong use is refused before anything runs,
 * with a message naming what is wrong (a non-retryable failure, so a workflow fails with it).
 */
import { ApplicationFailure } from '@temporalio/common';
import { tool } from 'ai';
import { z } from 'zod';
import { guardAgent, isGuarded } from '../../ai-sdk';
import { ledgerWrites } from '../../ai-sdk/worker';
import type { Ledger } from '../../storage/ledger';

const search = tool({
  description: 'search',
  inputSchema: z.object({ q: z.string() }),
  execute: async () => [],
});
const fileTicket = tool({ description: 'file', inputSchema: z.object({ title: z.string() }) });

function refusal(fn: () => unknown): ApplicationFailure {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).nonRetryable).toBe(true);
    return err as ApplicationFailure;
  }
  throw new Error('not refused');
}

describe('guardAgent refuses', () => {
  it('a write tool without an operation-key rule, naming the tool', () => {
    const err = refusal(() =>
      guardAgent(
        { search, file_ticket: fileTicket },
        {
          reads: ['search'],
          writes: { file_ticket: { activity: 'fileTicket' } as never },
        },
      ),
    );
    expect(err.type).toBe('write_without_operation_key');
    expect(err.message).toMatch(/^write tool "file_ticket" has no operation-key rule/);
  });

  it('a tool declared neither read nor write', () => {
    const err = refusal(() => guardAgent({ search, file_ticket: fileTicket }, { reads: ['search'] }));
    expect(err.type).toBe('undeclared_tool');
    expect(err.message).toMatch(/tool "file_ticket" is neither in reads nor in writes/);
  });

  it('a tool without an input schema', () => {
    const bare = { description: 'no schema', execute: async () => 1 } as never;
    const err = refusal(() => guardAgent({ bare }, { reads: ['bare'] }));
    expect(err.type).toBe('no_input_schema');
    expect(err.message).toMatch(/tool "bare" has no inputSchema/);
  });

  it('a declared tool that is not in the set', () => {
    const err = refusal(() => guardAgent({ search }, { reads: ['search', 'serach'] }));
    expect(err.type).toBe('unknown_tool');
    expect(err.message).toMatch(/"serach" is declared but is not one of the tools/);
  });

  it('tools already guarded', () => {
    const marked = {
      search: Object.defineProperty({ ...search }, Symbol.for('agent-loop-guard.ai-sdk.guarded'), {
        value: true,
      }),
    };
    expect(isGuarded(marked)).toBe(true);
    expect(isGuarded({ search })).toBe(false);
    const err = refusal(() => guardAgent(marked, { reads: ['search'] }));
    expect(err.type).toBe('already_guarded');
  });

  it('use outside workflow code', () => {
    const err = refusal(() => guardAgent({ search }, { reads: ['search'] }));
    expect(err.type).toBe('not_in_workflow');
    expect(err.message).toMatch(/^guardAgent runs in workflow code/);
  });
});

describe('ledgerWrites', () => {
  it('refuses a call without the guard’s operation key, running nothing', async () => {
    let ran = 0;
    const writes = ledgerWrites({} as Ledger, {
      fileTicket: async () => {
        ran += 1;
        return 1;
      },
    });
    await expect(writes.fileTicket({} as never, undefined as never)).rejects.toThrow(
      /fileTicket is a guarded write: it runs only through guardAgent's tools/,
    );
    expect(ran).toBe(0);
  });
});
