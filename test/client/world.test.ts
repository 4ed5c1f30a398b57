/** demo/world-client.ts: the one place agentctl and the demo read tool execution counters from. */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { World } from '../../demo/world';
import { CliError, Exit } from '../../client/format';
import { readCounters } from '../../demo/world-client';

describe('readCounters', () => {
  const dir = mkdtempSync(join(tmpdir(), 'counters-'));

  async function worldWithCalls(name: string): Promise<string> {
    const url = `sqlite:${join(dir, name)}`;
    const world = World.open(url);
    await world.countCall('run-1', 'search');
    await world.countCall('run-1', 'search');
    await world.countCall('run-2', 'deploy');
    world.close();
    return url;
  }

  it('reads one run, or all runs, from a world URL', async () => {
    const url = await worldWithCalls('two-runs.db');
    expect(await readCounters(url, 'run-1')).toEqual({ search: 2 });
    expect(await readCounters(url)).toEqual({ search: 2, deploy: 1 });
  });

  it('reads an open world in place (the demo reads its own worker’s)', async () => {
    const world = World.open(await worldWithCalls('open.db'));
    try {
      expect(await readCounters(world, 'run-2')).toEqual({ deploy: 1 });
    } finally {
      world.close();
    }
  });

  it('answers null for a world that is not on this machine, without creating it', async () => {
    const file = join(dir, 'absent.db');
    expect(await readCounters(`sqlite:${file}`, 'run-1')).toBeNull();
    expect(existsSync(file)).toBe(false);
    expect(await readCounters('sqlite::memory:', 'run-1')).toBeNull();
    expect(await readCounters('postgres://h/db', 'run-1')).toBeNull();
  });

  it('opens the world when asked to (world counters), and a URL that cannot be opened is exit 1', async () => {
    expect(await readCounters(`sqlite:${join(dir, 'new.db')}`, undefined, { open: 'always' })).toEqual({});
    const err = await readCounters('postgres://h/db', undefined, { open: 'always' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect(err).toMatchObject({
      exitCode: Exit.ERROR,
      message: expect.stringContaining('cannot open the demo world at postgres://h/db'),
    });
  });
});
