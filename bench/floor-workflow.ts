/**
 * The floor of bench/floor.ts: the bare Temporal program a careful user would write by hand
 * for N steps, one activity call each (a plain activity, or one that keeps its own
 * idempotency record in one SQLite transaction). Workflow code: activities as types only.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { FloorActivities } from './floor-activities';

const acts = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });

/** What a floor run does: `steps` calls of the plain or the exactly-once activity. */
export interface FloorRunInput {
  readonly tag: string;
  readonly steps: number;
  readonly once: boolean;
}

/** `steps` activity calls in a row; returns the last step's number. */
export async function floorRun(input: FloorRunInput): Promise<number> {
  let last = -1;
  for (let n = 0; n < input.steps; n++) {
    const args = { tag: input.tag, n };
    last = (input.once ? await acts.floorOnce(args) : await acts.floorPlain(args)).n;
  }
  return last;
}
