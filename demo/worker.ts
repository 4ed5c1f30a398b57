/**
 * `npm run worker`: the demo's worker, hosting the demo world and its tools (plus the MCP
 * tools of agent.config.json), so `agentctl start --script demo/scripts/…` and the demo run.
 */
import '../common/node-floor-check'; // first: below the Node floor, the message and its remedy
import { exitOnFailure, runWorker } from '../worker/run-worker';
import { openDemoWorkerDeps } from './deps';

exitOnFailure(runWorker((env) => openDemoWorkerDeps({ ledgerUrl: env.ledgerUrl, worldUrl: env.worldUrl })));
