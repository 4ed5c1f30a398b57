/**
 * The test workflows of test/ai-sdk bundled once per file, through `@temporalio/ai-sdk`'s plugin
 * (its polyfills first), as a user's worker bundles them. The bundle-time model provider is never
 * called: each worker gets its own plugin pointed at the file's local model server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { openLedger, type Ledger } from '../../storage/ledger';
import { createTestEnv } from '../helpers/temporal-env';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';

export function bundleAiSdkWorkflows(workflowsPath: string): ReturnType<typeof bundleWorkflowCode> {
  return bundleWorkflowCode({
    workflowsPath,
    plugins: [
      new AiSdkPlugin({
        modelProvider: createOpenAICompatible({ name: 'unused', baseURL: 'http://127.0.0.1:1/v1' }),
      }),
    ],
    logger: new DefaultLogger('WARN'),
  });
}

/** What one test file of test/ai-sdk runs against; every field is set before its first test. */
export interface AiSdkTestBed {
  env: TestWorkflowEnvironment;
  dir: string;
  ledger: Ledger;
  workflowBundle: { code: string };
  /** A local model server for `script`, closed after the file. */
  serve(script: Parameters<typeof startOpenAIServer>[0]): Promise<OpenAIServer>;
}

/**
 * Registers the file's `beforeAll`/`afterAll`: the shared dev server's environment, a scratch
 * folder with a SQLite ledger, the workflows bundled once, and the model servers it starts.
 */
export function aiSdkTestBed(prefix: string, workflowsPath: string): AiSdkTestBed {
  const servers: OpenAIServer[] = [];
  const bed = {
    serve: async (script: Parameters<typeof startOpenAIServer>[0]) => {
      const server = await startOpenAIServer(script);
      servers.push(server);
      return server;
    },
  } as AiSdkTestBed;
  beforeAll(async () => {
    bed.env = await createTestEnv();
    bed.dir = mkdtempSync(join(tmpdir(), prefix));
    bed.ledger = await openLedger(`sqlite:${join(bed.dir, 'ledger.db')}`);
    bed.workflowBundle = await bundleAiSdkWorkflows(workflowsPath);
  });
  afterAll(async () => {
    await bed.ledger?.close();
    for (const s of servers) await s.close();
    await bed.env?.teardown();
    if (bed.dir) rmSync(bed.dir, { recursive: true, force: true });
  });
  return bed;
}
