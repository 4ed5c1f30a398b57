/**
 * Issue 31, the forged twin, on a durable run driven by a model (the official OpenAI SDK
 * against a local Chat Completions server): the model proposes a 125.00 wire, the run stops
 * approval_required, a person approves exactly that call, and after the resume the model
 * proposes a twin — other payee text, 49,999.00 — whose 64-bit guard fingerprint is the SAME.
 * The twin does not run on the first call's approval: the tool's counter stays 0 and the run
 * stops approval_required again, showing the twin's own digest.
 */
import { z } from 'zod';
import { reportQuery, statusQuery } from '../../common/contracts';
import { defineTool } from '../../tools/define-tool';
import { approveRun, getApprovalAudit } from '../../client/approvals';
import { fingerprintCall } from '../../guard';
import { TWIN_WIRES } from '../helpers/fingerprint-collision';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { startHarness, type Harness } from '../helpers/run-harness';
import { waitFor } from '../helpers/run-inputs';

const KEY_ENV = 'TWIN_LLM_KEY';
const PLANNER = { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'twin-llm' } as const;
const [APPROVED, TWIN] = TWIN_WIRES;

const wires: { cents: number; ref: string }[] = [];
const wire = defineTool({
  name: 'wire',
  description: 'Wire money; above 1000 cents a person must approve.',
  effect: 'write',
  schema: z.object({ cents: z.number().int(), ref: z.string() }).strict(),
  operationKey: (a) => `wire:${a.ref}`,
  requiresApproval: (a) => a.cents > 1000,
  async execute(a) {
    wires.push(a);
    return { data: { sent: a.cents } };
  },
});

describe('a twin of an approved call with the same fingerprint (durable, issue 31)', () => {
  let h: Harness;
  let model: OpenAIServer;

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-twin';
    // The first request proposes the approved wire; every later one its twin.
    model = await startOpenAIServer((i) => ({
      tool_calls: [{ name: 'wire', arguments: JSON.stringify(i === 0 ? APPROVED : TWIN) }],
    }));
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'twin-llm': { provider: 'openai', baseURL: model.baseURL, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness({ tools: [wire] });
  });
  afterAll(async () => {
    await h?.close();
    await model?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('the twin needs its own approval: the wire counter stays 0 and the run stops on the twin', async () => {
    expect(fingerprintCall('wire', TWIN)).toBe(fingerprintCall('wire', APPROVED));
    const run = await h.start({ goal: 'pay the vendor 125.00', planner: PLANNER, resumeWindowMs: 60_000 });
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const first = await run.handle.query(reportQuery);
    expect(first).toMatchObject({ guard_reason: 'approval_required' });
    const approvedDigest = first?.blocked_call?.args_digest;
    expect(approvedDigest).toMatch(/^sha256:[0-9a-f]{64}$/);

    const approval = await approveRun(h.env.client, run.workflowId, {
      reason: '125.00 to the vendor, invoice checked',
      ledger: h.deps.ledger,
      key: null,
      resume: true,
    });
    expect(approval.resume).toMatchObject({ accepted: true });
    expect(approval.approval.argsHash).toBe(approvedDigest);

    // After the resume the model proposes the twin: it stops again, on its own digest.
    const second = await waitFor(
      () => run.handle.query(reportQuery),
      (r) => r?.guard_reason === 'approval_required' && r.blocked_call?.args_digest !== approvedDigest,
    );
    expect(second?.blocked_call?.fingerprint).toBe(first?.blocked_call?.fingerprint);
    expect(second?.blocked_call?.args_digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(wires).toEqual([]);
    expect((await h.counters(run.workflowId)).wire ?? 0).toBe(0);
    expect(model.completionRequests().length).toBeGreaterThanOrEqual(2);

    // The first approval was never used for the twin; the audit shows the twin requested.
    const audit = await getApprovalAudit({ ledger: h.deps.ledger, runId: run.workflowId });
    expect(audit.filter((e) => e.action === 'consumed')).toEqual([]);
    expect(audit.filter((e) => e.action === 'requested').length).toBeGreaterThanOrEqual(2);
    await run.handle.terminate('test done');
  });
});
