/**
 * Imported first by entry points (worker/main.ts): below the Node floor, print the reason and
 * exit 1 before any module that would crash on an old Node is loaded.
 */
import { nodeFloorProblem } from './node-floor';

const problem = nodeFloorProblem();
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
