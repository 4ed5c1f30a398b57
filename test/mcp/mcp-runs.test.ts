/**
 * MCP tools under the guard, through real durable runs: the shared Temporal dev server, a
 * worker whose openWorkerDeps reads AGENT_CONFIG, and two real MCP servers made with the
 * SDK as subprocesses (stdio `notes`, Streamable HTTP `remote`). Every assertion about a
 * call that must not happen reads the server's own counter.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { traceQuery } from '../../common/contracts';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor } from '../helpers/run-inputs';
import {
  counters,
  REPO_ROOT,
  requests,
  startHttpFixture,
  state,
  stateFile,
  STDIO_SERVER,
  type HttpFixture,
} from './fixture-servers';
import { runResult } from '../helpers/run-result';

const notesState = stateFile('stdio');
const remoteState = stateFile('http');
let http: HttpFixture;
let h: Harness;
const savedConfig = process.env.AGENT_CONFIG;

/** Calls of `tool` at a server since `before`. */
const delta = (file: string, tool: string, before: Record<string, number>) =>
  (counters(file)[tool] ?? 0) - (before[tool] ?? 0);

beforeAll(async () => {
  http = await startHttpFixture(remoteState);
  const file = join(dirname(notesState), 'agent.config.json');
  writeFileSync(
    file,
    JSON.stringify({
      mcpServers: {
        notes: {
          command: process.execPath,
          args: ['--import', 'tsx', STDIO_SERVER, notesState],
          cwd: REPO_ROOT,
          env: { FIXTURE_MARK: 'given' },
          tools: {
            add_note: { operationKey: 'note:{id}', nonSemantic: ['requestId'] },
            delete_note: { operationKey: 'delete:{id}', requiresApproval: true },
          },
        },
        remote: {
          url: http.url,
          headers: { authorization: 'Bearer ${FIXTURE_HTTP_TOKEN}' },
          // Long enough for the test to restart the killed server before the re-poll.
          retryAfterMs: 3000,
          tools: {
            add_note: { operationKey: { prefix: 'remote-note:{id}', hashOf: ['text'] } },
            delete_note: { hidden: true },
          },
          progress: { tool: 'stats', path: 'store.version' },
        },
      },
    }),
  );
  process.env.AGENT_CONFIG = file;
  process.env.FIXTURE_HTTP_TOKEN = 'fixture-token';
  // A secret of the worker that must not reach the stdio server.
  process.env.WORKER_SECRET_FOR_TEST = 'do-not-leak';
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
  await http?.kill();
  if (savedConfig === undefined) delete process.env.AGENT_CONFIG;
  else process.env.AGENT_CONFIG = savedConfig;
});

describe('MCP tools under the guard', () => {
  it('offers the servers tools to planners as mcp__NAME__TOOL with their JSON Schema and effects', () => {
    const d = h.deps.registry.descriptors();
    const lookup = d.find((t) => t.name === 'mcp__notes__lookup');
    expect(lookup).toMatchObject({ effect: 'read', inputSchema: { additionalProperties: false } });
    expect(lookup?.inputSchema.properties).toHaveProperty('query');
    expect(d.find((t) => t.name === 'mcp__remote__add_note')).toMatchObject({ effect: 'write' });
    expect(d.find((t) => t.name === 'mcp__remote__delete_note')).toBeUndefined(); // hidden
    expect(d.find((t) => t.name === 'mcp__notes__delete_note')?.description).toMatch(
      /destructive.*requires a person's approval/,
    );
    expect(h.deps.registry.get('mcp__notes__delete_note')?.vendorIdempotent).toBe(true); // idempotentHint
    expect(h.deps.registry.get('mcp__notes__add_note')?.vendorIdempotent).toBe(false);
  });

  it('stops a repeated read same_call_repeat before the third call reaches the server', async () => {
    const before = counters(notesState);
    const call = { tool: 'mcp__notes__lookup', args: { query: 'temporal' } };
    const run = await h.start(live([call, call, call]));
    expect(await runResult(run)).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
    });
    expect(delta(notesState, 'lookup', before)).toBe(2);
  });

  it('runs a write once: re-proposed in the run and in a second run, the ledger answers', async () => {
    const before = counters(notesState);
    const write = (requestId: string) => ({
      tool: 'mcp__notes__add_note',
      args: { id: 'n-1', text: 'hello', requestId },
    });
    const first = await h.start(live([write('r-1'), write('r-2')]));
    expect(await runResult(first)).toMatchObject({ executed: 1, cached: 1 });
    const second = await h.start(live([write('r-3')]));
    const r2 = await runResult(second);
    expect(r2).toMatchObject({ executed: 0, cached: 1 });
    expect(delta(notesState, 'add_note', before)).toBe(1);
    expect(state(notesState).notes['n-1']).toBe('hello');
  });

  it('answers invalid args PRECONDITION invalid_args naming the field, without calling the server', async () => {
    const before = counters(notesState);
    const sent = requests(notesState);
    const bad = { tool: 'mcp__notes__lookup', args: { query: 5, extra: true } };
    const run = await h.start(live([bad, bad]));
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'precondition_unchanged' });
    const trace = await run.handle.query(traceQuery, { limit: 100 });
    const after = trace.records.find((r) => r.phase === 'after');
    expect(after).toMatchObject({ result_kind: 'PRECONDITION', error_code: 'invalid_args' });
    expect(result.report?.unmet_precondition).toBe(
      'extra: is not an argument of this tool; query: must be string',
    );
    expect(delta(notesState, 'lookup', before)).toBe(0);
    expect((requests(notesState).lookup ?? 0) - (sent.lookup ?? 0)).toBe(0); // not even sent
  });

  it('stops a requiresApproval tool NEEDS_HUMAN approval_required without calling the server', async () => {
    const before = requests(notesState);
    const run = await h.start(live([{ tool: 'mcp__notes__delete_note', args: { id: 'n-1' } }]));
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'approval_required' });
    expect(result.report?.blocked_call).toMatchObject({ tool: 'mcp__notes__delete_note' });
    expect((requests(notesState).delete_note ?? 0) - (before.delete_note ?? 0)).toBe(0);
  });

  it('gives the stdio server only its configured env plus PATH', async () => {
    const conn = h.deps.mcp.pool.get('notes')!;
    const r = await conn.callTool('env_keys', {});
    const keys = (r.structuredContent as { keys: string[] }).keys;
    expect(keys).toContain('FIXTURE_MARK');
    expect(keys).toContain('PATH');
    expect(keys).not.toContain('WORKER_SECRET_FOR_TEST');
    expect(keys).not.toContain('HOME');
  });

  it('respawns a stdio server that died: the next call reconnects', async () => {
    const conn = h.deps.mcp.pool.get('notes')!;
    const pid = conn.pid!;
    const before = counters(notesState);
    process.kill(pid, 'SIGKILL');
    await waitFor(
      async () => conn.pid,
      (p) => p === null,
    );
    const run = await h.start(live([{ tool: 'mcp__notes__lookup', args: { query: 'after-crash' } }]));
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'PARTIAL', reason: 'planner_exhausted', executed: 1 });
    expect(delta(notesState, 'lookup', before)).toBe(1);
    expect(conn.pid).not.toBe(pid);
    expect(state(notesState).pids.length).toBeGreaterThanOrEqual(2);
  });

  it('answers RETRYABLE while the HTTP server is dead, then the re-poll reconnects and the run goes on', async () => {
    const before = counters(remoteState);
    const write = { tool: 'mcp__remote__add_note', args: { id: 'h-1', text: 'over http' } };
    await http.kill();
    const run = await h.start(live([write, write, { tool: 'mcp__remote__lookup', args: { query: 'q' } }]));
    await waitFor(
      () => run.handle.query(traceQuery, { limit: 100 }),
      (t) => t.records.some((r) => r.phase === 'after' && r.result_kind === 'RETRYABLE'),
    );
    http = await startHttpFixture(remoteState, http.port);
    const result = await runResult(run);
    const trace = await run.handle.query(traceQuery, { limit: 100 });
    const kinds = trace.records.filter((r) => r.phase === 'after').map((r) => [r.result_kind, r.error_code]);
    expect(kinds).toEqual([
      ['RETRYABLE', 'mcp_unavailable'],
      ['SUCCESS', null],
      ['SUCCESS', null],
    ]);
    expect(result).toMatchObject({ terminal_state: 'PARTIAL', reason: 'planner_exhausted', executed: 3 });
    // Refused while down (nothing performed), then performed exactly once.
    expect(delta(remoteState, 'add_note', before)).toBe(1);
    // The progress probe (stats → store.version) moved with the write.
    const progress = trace.records.filter((r) => r.phase === 'after').map((r) => r.progress_version);
    expect(progress[1]).toBeGreaterThan(progress[0]!);
  });
});
