/**
 * The activity-context helpers, inside a (mock) Temporal activity and outside any:
 * outside they must answer, not throw, because unit tests call activities directly.
 */
import type { Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import {
  DIRECT_EXECUTION,
  activityExecution,
  activityLog,
  cancellationSignal,
  cancellationSignalOrNever,
  heartbeat,
  warn,
} from '../../activities/activity-context';

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at =
    (level: string) =>
    (message: string): void => {
      lines.push(`${level} ${message}`);
    };
  return {
    lines,
    log: (level, message) => lines.push(`${level} ${message}`),
    trace: at('TRACE'),
    debug: at('DEBUG'),
    info: at('INFO'),
    warn: at('WARN'),
    error: at('ERROR'),
  };
}

describe('activity-context outside an activity', () => {
  afterEach(() => jest.restoreAllMocks());

  it('reports the direct execution, heartbeats as a no-op and has no cancellation signal', () => {
    expect(activityExecution()).toEqual({ attempt: 1, activityId: 'direct' });
    expect(activityExecution()).toBe(DIRECT_EXECUTION);
    expect(() => heartbeat({ progress: 1 })).not.toThrow();
    expect(cancellationSignal()).toBeUndefined();
  });

  it('gives work that needs a signal a fresh one that never fires', () => {
    const a = cancellationSignalOrNever();
    const b = cancellationSignalOrNever();
    expect(a.aborted).toBe(false);
    expect(a).not.toBe(b);
  });

  it('logs to the console', () => {
    const consoleWarn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const consoleInfo = jest.spyOn(console, 'info').mockImplementation(() => undefined);
    warn('no price for model m');
    activityLog('info', 'with attrs', { model: 'm' });
    expect(consoleWarn).toHaveBeenCalledWith('no price for model m');
    expect(consoleInfo).toHaveBeenCalledWith('with attrs', { model: 'm' });
  });
});

describe('activity-context inside an activity', () => {
  it('reads attempt and activity id from the activity info', async () => {
    const env = new MockActivityEnvironment({ attempt: 3, activityId: 'act-7' });
    expect(await env.run(async () => activityExecution())).toEqual({ attempt: 3, activityId: 'act-7' });
  });

  it('heartbeats the activity with its details', async () => {
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (details: unknown) => beats.push(details));
    await env.run(async () => {
      heartbeat();
      heartbeat({ step: 2 });
    });
    expect(beats).toEqual([undefined, { step: 2 }]);
  });

  it("hands out the activity's own cancellation signal, which fires when the activity is cancelled", async () => {
    const env = new MockActivityEnvironment();
    const signals = await env.run(async (): Promise<Array<AbortSignal | undefined>> => [
      cancellationSignal(),
      cancellationSignalOrNever(),
    ]);
    expect(signals[0]).toBe(env.context.cancellationSignal);
    expect(signals[1]).toBe(env.context.cancellationSignal);
    env.cancel();
    expect(signals[0]?.aborted).toBe(true);
  });

  it('logs through the activity logger, not the console', async () => {
    const logger = recordingLogger();
    const consoleWarn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const env = new MockActivityEnvironment({}, { logger });
    await env.run(async () => warn('no price for model m'));
    expect(logger.lines.join('\n')).toContain('no price for model m');
    expect(consoleWarn).not.toHaveBeenCalled();
    consoleWarn.mockRestore();
  });
});
