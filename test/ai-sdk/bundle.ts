/**
 * The test workflows of test/ai-sdk bundled once per file, through `@temporalio/ai-sdk`'s plugin
 * (its polyfills first), as a user's worker bundles them. The bundle-time model provider is never
 * called: each worker gets its own plugin pointed at the file's local model server.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';

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
