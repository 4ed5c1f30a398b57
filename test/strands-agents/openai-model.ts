/**
 * The Strands SDK's OpenAI provider (`@strands-agents/sdk/models/openai`, an ESM subpath export)
 * for the tests: this repository resolves types the node10 way, which does not read `exports`,
 * so its types are named by their file and the module is required by its public subpath.
 */
type OpenAIModelModule = typeof import('@strands-agents/sdk/dist/src/models/openai/index.js');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const openai = require('@strands-agents/sdk/models/openai') as OpenAIModelModule;

export const OpenAIModel = openai.OpenAIModel;
