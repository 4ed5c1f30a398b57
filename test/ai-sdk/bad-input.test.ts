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
import { MockActivityEnvironment } from '@temporalio/testing';

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

  it('an approval wait that is not > 0, a bad tenant or output bound for the spend limit', () => {
    const writes = {
      file_ticket: { activity: 'fileTicket', operationKey: () => 'k', requiresApproval: true },
    };
    const tools = { search, file_ticket: fileTicket };
    const wait = refusal(() => guardAgent(tools, { reads: ['search'], writes, approvalWaitMs: 0 }));
    expect(wait.type).toBe('invalid_option');
    expect(wait.message).toBe('approvalWaitMs must be a number of ms > 0, got 0');
    const tenant = refusal(() => guardAgent(tools, { reads: ['search'], writes, spend: { tenant: 'a b' } }));
    expect(tenant.type).toBe('invalid_option');
    expect(tenant.message).toMatch(/^spend.tenant must be 1-64 letters/);
    const max = refusal(() =>
      guardAgent(tools, { reads: ['search'], writes, spend: { tenant: 'acme', maxOutputTokens: 1.5 } }),
    );
    expect(max.message).toMatch(/^spend.maxOutputTokens must be an integer > 0, got 1.5/);
    // A price of no known type (neither { inputPerMTok, outputPerMTok } nor the old spelling).
    const price = refusal(() =>
      guardAgent(tools, {
        reads: ['search'],
        writes,
        spend: { tenant: 'acme' },
        prices: { perToken: 0.001 } as never,
      }),
    );
    expect(price.type).toBe('invalid_option');
    expect(price.message).toMatch(/^prices is an unknown price type \(unexpected "perToken"\)/);
    const negative = refusal(() =>
      guardAgent(tools, { reads: ['search'], writes, prices: { inputPerMTok: -1, outputPerMTok: 1 } }),
    );
    expect(negative.message).toMatch(/^prices.inputPerMTok must be a finite number ≥ 0/);
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

  it('refuses a gated write that comes without an approval, running nothing', async () => {
    let ran = 0;
    const writes = ledgerWrites({} as Ledger, {
      transfer: async () => {
        ran += 1;
        return 1;
      },
    });
    const meta = { tool: 'transfer', operationKey: 'k', runId: 'r', requiresApproval: true };
    const err = await new MockActivityEnvironment()
      .run(writes.transfer, {} as never, meta)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    // The agentRun tool's result, as the workflow's guard reads it back (worker/guarded-write.ts).
    expect((err as ApplicationFailure).type).toBe('FATAL');
    expect((err as ApplicationFailure).details?.[0]).toMatchObject({ code: 'approval_required' });
    expect((err as ApplicationFailure).message).toMatch(
      /transfer needs a person's approval of this exact call/,
    );
    expect(ran).toBe(0);
  });
});
