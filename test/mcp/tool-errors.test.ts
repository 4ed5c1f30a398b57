/**
 * MCP tool errors in an LLM run (issue 29): an `isError` result the server config does not
 * classify (no `onError`) goes back to the model as PRECONDITION `tool_error`, its text cut and
 * redacted; outside an LLM run it stays FATAL `tool_error`; an explicit `onError` is kept.
 * The tool is built over a fake connection (the classification is the tool's, not the wire's).
 */
import { createMcpTool } from '../../tools/mcp/mcp-tool';
import type { McpConnection } from '../../tools/mcp/client-pool';
import type { ToolContext } from '../../tools/define-tool';
import { undeclaredToModel, MAX_TOOL_ERROR_CHARS } from '../../tools/tool-errors';
import { FatalToolError } from '../../tools/errors';
import { classifyError } from '../../tools/classify';

const SECRET = 'ghp_0123456789abcdefghijklmnopqrstuvwxyz';

function tool(text: string, onError?: 'FATAL' | 'RETRYABLE' | 'PRECONDITION') {
  const connection = {
    name: 'airline',
    retryAfterMs: 1000,
    callTool: async () => ({ isError: true, content: [{ type: 'text', text }] }),
  } as unknown as McpConnection;
  return createMcpTool({
    connection,
    listed: {
      name: 'book',
      inputSchema: { type: 'object', properties: {} },
      annotations: { readOnlyHint: true },
    },
    ...(onError ? { override: { onError } } : {}),
  });
}

const ctx = (errorsToModel: boolean): ToolContext => ({
  runId: 'r',
  operationKey: null,
  heartbeat: () => undefined,
  signal: new AbortController().signal,
  tx: {} as ToolContext['tx'],
  ...(errorsToModel ? { errorsToModel: true } : {}),
});

describe('MCP isError in an LLM run', () => {
  it('goes to the model as PRECONDITION tool_error, cut and redacted', async () => {
    const text = `payment method not found (token ${SECRET}) ${'y'.repeat(10_000)}`;
    const r = (await tool(text).execute({}, ctx(true))) as { kind: string; code: string; unmet: string };
    expect(r).toMatchObject({ kind: 'PRECONDITION', code: 'tool_error' });
    expect(r.unmet).toContain('payment method not found');
    expect(r.unmet).not.toContain(SECRET);
    expect(r.unmet.length).toBeLessThan(MAX_TOOL_ERROR_CHARS + 50);
  });

  it('stays FATAL tool_error outside an LLM run, and an explicit onError is kept in one', async () => {
    expect(await tool('boom').execute({}, ctx(false))).toMatchObject({ kind: 'FATAL', code: 'tool_error' });
    expect(await tool('boom', 'FATAL').execute({}, ctx(true))).toMatchObject({
      kind: 'FATAL',
      code: 'tool_error',
    });
    expect(await tool('busy', 'RETRYABLE').execute({}, ctx(true))).toMatchObject({ kind: 'RETRYABLE' });
  });
});

describe('undeclaredToModel', () => {
  it('hands a plain Error to the model; a declared FatalToolError and other kinds stay as they are', () => {
    const plain = new Error(`amount does not add up ${SECRET}`);
    expect(undeclaredToModel(classifyError(plain), plain)).toEqual({
      kind: 'PRECONDITION',
      code: 'tool_error',
      unmet: 'amount does not add up [REDACTED]',
    });
    const declared = new FatalToolError('no', 'tool_error');
    expect(undeclaredToModel(classifyError(declared), declared)).toMatchObject({ kind: 'FATAL' });
    const denied = Object.assign(new Error('forbidden'), { status: 403 });
    expect(undeclaredToModel(classifyError(denied), denied)).toMatchObject({
      kind: 'FATAL',
      code: 'permission_denied',
    });
    const huge = new Error('z'.repeat(1_000_000));
    const cut = undeclaredToModel(classifyError(huge), huge) as { unmet: string };
    expect(cut.unmet.length).toBeLessThan(MAX_TOOL_ERROR_CHARS + 50);
    expect(undeclaredToModel(classifyError('a string'), 'a string')).toMatchObject({ unmet: 'a string' });
  });
});
