/**
 * A run input too large for a Temporal payload is refused by the client with its size named,
 * before anything is sent (issue 9: no payload may wedge a run).
 */
import type { Client } from '@temporalio/client';
import { startRun } from '../../client/runs';
import { MAX_PAYLOAD_BYTES } from '../../common/payload-limits';
import type { RunInput } from '../../common/contracts';

describe('startRun', () => {
  it('refuses an input above the payload limit, naming its size, without calling the server', async () => {
    let calls = 0;
    const client = {
      workflow: {
        start: async () => {
          calls += 1;
          throw new Error('must not be called');
        },
      },
    } as unknown as Client;
    const input = { goal: 'x'.repeat(MAX_PAYLOAD_BYTES), planner: { kind: 'openai' } } as unknown as RunInput;
    await expect(startRun(client, { workflowId: 'w', taskQueue: 'q', input })).rejects.toThrow(
      new RegExp(
        `the run input is ${JSON.stringify(input).length} bytes, above the ${MAX_PAYLOAD_BYTES}-byte payload limit`,
      ),
    );
    expect(calls).toBe(0);
  });
});
