/**
 * The worker, as the integration's README shows it: `StrandsPlugin({ models })` with the Strands
 * SDK's `OpenAIModel` (Responses API, its default) pointed at the local model server.
 * PROVIDER=documented: the model exactly as documented. PROVIDER=stripped: the same model, its
 * `cancelSignal` option dropped when it is not an AbortSignal (it reaches the activity as `{}`).
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { StrandsPlugin } from '@temporalio/strands-agents';
import { OpenAIModel } from '@strands-agents/sdk/models/openai';
import { fileURLToPath } from 'node:url';
import * as activities from './activities.ts';

const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};

class SignalSafeOpenAIModel extends OpenAIModel {
  override stream(
    messages: Parameters<OpenAIModel['stream']>[0],
    options?: Parameters<OpenAIModel['stream']>[1],
  ) {
    const o = options as (Record<string, unknown> & { cancelSignal?: unknown }) | undefined;
    if (o && o.cancelSignal !== undefined && !(o.cancelSignal instanceof AbortSignal)) {
      const { cancelSignal: _dropped, ...rest } = o;
      return super.stream(messages, rest as never);
    }
    return super.stream(messages, options);
  }
}

const provider = process.env.PROVIDER ?? 'stripped';
const config = { modelId: 'gpt-scripted', apiKey: 'sk-local', clientConfig: { baseURL: env('MODEL_URL') } };

const connection = await NativeConnection.connect({ address: env('TEMPORAL_ADDRESS') });
const worker = await Worker.create({
  connection,
  taskQueue: env('TASK_QUEUE'),
  workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
  activities,
  maxConcurrentActivityTaskExecutions: 20,
  plugins: [
    new StrandsPlugin({
      models: {
        openai: () =>
          provider === 'documented' ? new OpenAIModel(config) : new SignalSafeOpenAIModel(config),
      },
    }),
  ],
});
process.on('SIGTERM', () => worker.shutdown());
console.log(
  `worker up: queue=${env('TASK_QUEUE')} provider=${provider} payMode=${process.env.PAY_MODE ?? 'ok'}`,
);
await worker.run();
