/**
 * The product's worker binary (`node dist/worker/main.js`): the tools of the MCP servers in
 * agent.config.json (AGENT_CONFIG), nothing else. A worker with tools of its own is a program
 * of its own: `openWorkerDeps({ tools })` and `createAgentWorker` (README, "Your own agent").
 */
import '../common/node-floor-check'; // first: below the Node floor, the message and its remedy
import { openWorkerDeps } from './create-worker';
import { exitOnFailure, runWorker } from './run-worker';

exitOnFailure(runWorker((env) => openWorkerDeps({ ledgerUrl: env.ledgerUrl })));
