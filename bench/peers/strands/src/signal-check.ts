/** What the documented provider's "Connection error." is: the cancelSignal as the activity receives it ({}). */
import { OpenAIModel } from '@strands-agents/sdk/models/openai';
import { Message } from '@strands-agents/sdk';
import { startModelServer } from './server.ts';

const server = await startModelServer(() => [{ text: 'hello' }]);
const model = new OpenAIModel({
  modelId: 'gpt-scripted',
  apiKey: 'sk-local',
  clientConfig: { baseURL: server.baseURL, maxRetries: 0 },
});
const messages = [Message.fromMessageData({ role: 'user', content: [{ text: 'hi' }] } as never)];
// The workflow passes an AbortSignal; JSON across the activity boundary turns it into {}.
const options = JSON.parse(JSON.stringify({ cancelSignal: new AbortController().signal }));
console.log('cancelSignal as received:', JSON.stringify(options.cancelSignal));
try {
  for await (const _ of model.stream(messages, options)) void _;
  console.log('no error');
} catch (e) {
  const err = e as Error & { cause?: Error };
  console.log(
    'error:',
    err.constructor.name,
    JSON.stringify(err.message),
    '| cause:',
    err.cause?.constructor.name,
    JSON.stringify(err.cause?.message),
  );
}
console.log('requests reaching the server:', server.requests.length);
await server.close();
