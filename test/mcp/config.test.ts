/**
 * The MCP module's pure parts: the config's strict parse (errors name the field), the
 * operation key rules, the args schema (ajv behind zod) and the result/error table.
 * No server and no Temporal here; test/mcp/mcp-runs.test.ts has the real ones.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { compileArgsSchema } from '../../tools/mcp/args-schema';
import { classifyMcpError, classifyMcpResult, MAX_RESULT_CHARS } from '../../tools/mcp/classify';
import { configFileFromEnv, parseAgentConfig, readAgentConfig } from '../../tools/mcp/config';
import { McpConfigError, McpUnavailableError } from '../../tools/mcp/errors';
import { compileOperationKey, templateProblem } from '../../tools/mcp/operation-key';
import { openDemoWorkerDeps } from '../../demo/deps';

const ok = {
  mcpServers: {
    notes: { command: 'node', args: ['server.js'], env: { TOKEN: '${NOTES_TOKEN}' } },
    remote: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ${REMOTE_TOKEN}' } },
  },
};

function configError(value: unknown, env: NodeJS.ProcessEnv = {}): string {
  try {
    parseAgentConfig(value, { env });
  } catch (err) {
    expect(err).toBeInstanceOf(McpConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a McpConfigError');
}

describe('agent.config.json', () => {
  it('reads stdio and HTTP servers as other MCP clients write them, expanding ${VAR}', () => {
    const c = parseAgentConfig(ok, { env: { NOTES_TOKEN: 'n-1', REMOTE_TOKEN: 'r-2' } });
    expect(c.mcpServers.notes).toMatchObject({ command: 'node', env: { TOKEN: 'n-1' } });
    expect(c.mcpServers.remote).toMatchObject({ headers: { Authorization: 'Bearer r-2' } });
  });

  it('names the field of every malformed entry', () => {
    expect(configError({ mcpServers: { notes: { command: 7 } } })).toMatch(/mcpServers\.notes\.command: /);
    expect(configError({ mcpServers: { notes: { command: 'x', argz: [] } } })).toMatch(
      /mcpServers\.notes: Unrecognized key: "argz"/,
    );
    expect(configError({ mcpServers: { r: { url: 'ftp://x' } } })).toMatch(
      /mcpServers\.r\.url: must be an http/,
    );
    expect(configError({ mcpServers: { r: { type: 'sse', url: 'http://x' } } })).toMatch(
      /mcpServers\.r\.type: the SSE transport/,
    );
    expect(configError({ mcpServers: { r: {} } })).toMatch(/mcpServers\.r: needs "command"/);
    expect(configError({ mcpServers: { n: { command: 'x', tools: { t: { effect: 'delete' } } } } })).toMatch(
      /mcpServers\.n\.tools\.t\.effect: /,
    );
    expect(
      configError({ mcpServers: { n: { command: 'x', tools: { t: { operationKey: 'refund:{}' } } } } }),
    ).toMatch(/mcpServers\.n\.tools\.t\.operationKey: operation key template "refund:\{\}": a placeholder/);
    expect(configError({ mcpServers: {}, extra: 1 })).toMatch(/Unrecognized key: "extra"/);
    expect(configError(ok)).toMatch(
      /mcpServers\.notes\.env\.TOKEN: environment variable NOTES_TOKEN is not set/,
    );
  });

  it('reads AGENT_CONFIG, else ./agent.config.json when it exists, else nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'alg-cfg-'));
    expect(configFileFromEnv({}, dir)).toBeNull();
    writeFileSync(join(dir, 'agent.config.json'), '{"mcpServers": {}}');
    expect(configFileFromEnv({}, dir)).toBe(join(dir, 'agent.config.json'));
    expect(configFileFromEnv({ AGENT_CONFIG: 'other.json' }, dir)).toBe(join(dir, 'other.json'));
    writeFileSync(join(dir, 'bad.json'), '{"mcpServers": {"x": ');
    expect(() => readAgentConfig(join(dir, 'bad.json'))).toThrow(/bad\.json: not valid JSON/);
  });

  it('stops openWorkerDeps before anything opens when the file is malformed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alg-cfg-'));
    const file = join(dir, 'agent.config.json');
    writeFileSync(
      file,
      JSON.stringify({ mcpServers: { notes: { command: 'node', tools: { t: { effect: 1 } } } } }),
    );
    const url = `sqlite:${join(dir, 'agent.db')}`;
    await expect(openDemoWorkerDeps({ ledgerUrl: url, worldUrl: url, configPath: file })).rejects.toThrow(
      /agent\.config\.json: mcpServers\.notes\.tools\.t\.effect: /,
    );
  });
});

describe('MCP operation keys', () => {
  it('fills a template from arg paths, and gives no key when a path is missing', () => {
    const key = compileOperationKey('refund:{order.id}:{amount}', 'mcp__shop__refund')!;
    expect(key({ order: { id: 'o-1' }, amount: 500 })).toBe('refund:o-1:500');
    expect(key({ order: {}, amount: 500 })).toBeNull();
    expect(templateProblem('refund:{}')).toMatch(/needs an arg path/);
    expect(templateProblem('refund:{id')).toMatch(/unbalanced/);
  });

  it('hashes the chosen args behind a business prefix, ignoring non-semantic ones', () => {
    const byText = compileOperationKey({ prefix: 'note:{id}', hashOf: ['text'] }, 't')!;
    expect(byText({ id: 'a', text: 'x', requestId: '1' })).toBe(
      byText({ id: 'a', text: ' x ', requestId: '2' }),
    );
    expect(byText({ id: 'a', text: 'x' })).not.toBe(byText({ id: 'a', text: 'y' }));
    expect(byText({ id: 'a', text: 'x' })).toMatch(/^note:a:[0-9a-f]{32}$/);
    const all = compileOperationKey({ hashOf: 'args' }, 'mcp__s__t', ['requestId'])!;
    expect(all({ a: 1, requestId: 'r1' })).toBe(all({ requestId: 'r2', a: 1 }));
    expect(all({ a: 1 })).toMatch(/^mcp__s__t:/);
  });
});

describe('MCP args schema', () => {
  const schema = {
    type: 'object',
    properties: { query: { type: 'string', minLength: 1 }, limit: { type: 'integer', default: 3 } },
    required: ['query'],
    $schema: 'http://json-schema.org/draft-07/schema#',
  };

  it('fills defaults, closes the top level and names each invalid field', () => {
    const { schema: zodSchema, jsonSchema } = compileArgsSchema('mcp__s__lookup', schema);
    expect(jsonSchema.additionalProperties).toBe(false);
    expect(zodSchema.parse({ query: 'q' })).toEqual({ query: 'q', limit: 3 });
    const bad = zodSchema.safeParse({ limit: 'x', extra: true });
    expect(bad.success).toBe(false);
    const paths = bad.error!.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['query', 'limit', 'extra']));
  });

  it('keeps the args open when asked', () => {
    const { schema: zodSchema } = compileArgsSchema('mcp__s__lookup', schema, { openArgs: true });
    expect(zodSchema.safeParse({ query: 'q', extra: 1 }).success).toBe(true);
  });
});

describe('MCP result and error mapping', () => {
  it('takes structuredContent, else the joined text, bounded', () => {
    expect(classifyMcpResult({ content: [], structuredContent: { a: 1 } })).toEqual({
      kind: 'SUCCESS',
      data: { a: 1 },
    });
    expect(
      classifyMcpResult({
        content: [
          { type: 'text', text: 'one' },
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
          { type: 'text', text: 'two' },
        ],
      }),
    ).toEqual({ kind: 'SUCCESS', data: 'one\n[image image/png, 4 base64 chars]\ntwo' });
    const huge = classifyMcpResult({ content: [{ type: 'text', text: 'x'.repeat(MAX_RESULT_CHARS + 10) }] });
    expect(huge.kind === 'SUCCESS' && String(huge.data)).toMatch(/…\[truncated 10 chars\]$/);
  });

  it('maps isError by structured result, JSON-RPC text, the override, else FATAL tool_error', () => {
    const text = (t: string) => ({ content: [{ type: 'text', text: t }], isError: true });
    expect(classifyMcpResult(text('out of stock'))).toEqual({
      kind: 'FATAL',
      code: 'tool_error',
      message: 'out of stock',
    });
    expect(classifyMcpResult(text('busy'), { onError: 'RETRYABLE', retryAfterMs: 5 })).toMatchObject({
      kind: 'RETRYABLE',
      retryAfterMs: 5,
    });
    expect(classifyMcpResult(text('MCP error -32602: Tool nope not found'))).toMatchObject({
      kind: 'PRECONDITION',
      code: 'unknown_tool',
    });
    expect(classifyMcpResult(text('MCP error -32602: Input validation error: x'))).toMatchObject({
      kind: 'PRECONDITION',
      code: 'invalid_args',
    });
    expect(
      classifyMcpResult({
        content: [],
        isError: true,
        structuredContent: { kind: 'PRECONDITION', code: 'not_refundable', unmet: 'order shipped' },
      }),
    ).toEqual({ kind: 'PRECONDITION', code: 'not_refundable', unmet: 'order shipped' });
  });

  it('maps thrown errors: JSON-RPC codes, transport failures, auth', () => {
    expect(classifyMcpError(new McpError(ErrorCode.InvalidParams, 'bad'))).toMatchObject({
      kind: 'PRECONDITION',
      code: 'invalid_args',
    });
    expect(classifyMcpError(new McpError(ErrorCode.MethodNotFound, 'no'))).toMatchObject({
      kind: 'PRECONDITION',
      code: 'unknown_tool',
    });
    expect(classifyMcpError(new McpError(ErrorCode.InternalError, 'x'))).toMatchObject({
      kind: 'FATAL',
      code: 'tool_error',
    });
    const down = new McpUnavailableError('down', 's', false, { cause: new Error('fetch failed') });
    expect(classifyMcpError(down, { retryAfterMs: 7 })).toMatchObject({
      kind: 'RETRYABLE',
      code: 'mcp_unavailable',
      retryAfterMs: 7,
    });
    const timeout = new McpUnavailableError('t', 's', true, {
      cause: new McpError(ErrorCode.RequestTimeout, 'timed out'),
    });
    expect(classifyMcpError(timeout)).toMatchObject({ kind: 'RETRYABLE', code: 'mcp_timeout' });
    const denied = new McpUnavailableError('401', 's', false, { cause: new StreamableHTTPError(401, 'no') });
    expect(classifyMcpError(denied)).toMatchObject({ kind: 'FATAL', code: 'permission_denied' });
  });
});
