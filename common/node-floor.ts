/**
 * The oldest Node this package runs on (issue 34). Below it, better-sqlite3 13's binary
 * crashes the process (a segmentation fault on Node 20) instead of throwing, so the entry
 * points (agentctl, the worker binary) and the SQLite ledger check the version first and say
 * so plainly. Not for workflow code (it reads `process`).
 */

/** The major version of the oldest supported Node (package.json `engines.node`). */
export const NODE_FLOOR_MAJOR = 22;

/** The message for a Node below the floor, or undefined when `version` is new enough. */
export function nodeFloorProblem(version: string = process.versions.node): string | undefined {
  const major = Number.parseInt(version.replace(/^v/, ''), 10);
  if (Number.isFinite(major) && major >= NODE_FLOOR_MAJOR) return undefined;
  return `agent-loop-guard needs Node ${NODE_FLOOR_MAJOR} or newer (this is v${version.replace(/^v/, '')})`;
}

/** Throws the {@link nodeFloorProblem} message when this Node is below the floor. */
export function assertNodeFloor(): void {
  const problem = nodeFloorProblem();
  if (problem !== undefined) throw new Error(problem);
}
