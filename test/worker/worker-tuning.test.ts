/** AGENT_* worker tuning variables → Temporal WorkerOptions (worker/env.ts readWorkerTuning). */
import { readWorkerTuning, WORKER_ENV_VARS } from '../../worker/env';

describe('readWorkerTuning', () => {
  it('keeps every SDK default when nothing (or an empty value) is set', () => {
    expect(readWorkerTuning({})).toEqual({});
    expect(readWorkerTuning({ AGENT_MAX_CACHED_WORKFLOWS: '' })).toEqual({});
  });

  it('maps each variable to its worker option', () => {
    expect(
      readWorkerTuning({
        AGENT_MAX_CACHED_WORKFLOWS: '500',
        AGENT_MAX_CONCURRENT_WORKFLOW_TASKS: '80',
        AGENT_MAX_CONCURRENT_ACTIVITIES: '200',
        AGENT_WORKFLOW_TASK_POLLERS: 'auto',
        AGENT_ACTIVITY_TASK_POLLERS: '16',
        AGENT_STICKY_SCHEDULE_TO_START_MS: '3000',
      }),
    ).toEqual({
      maxCachedWorkflows: 500,
      maxConcurrentWorkflowTaskExecutions: 80,
      maxConcurrentActivityTaskExecutions: 200,
      workflowTaskPollerBehavior: { type: 'autoscaling' },
      activityTaskPollerBehavior: { type: 'simple-maximum', maximum: 16 },
      stickyQueueScheduleToStartTimeout: 3000,
    });
    expect(readWorkerTuning({ AGENT_WORKFLOW_TASK_POLLERS: 'AUTO:2:20:4' })).toEqual({
      workflowTaskPollerBehavior: { type: 'autoscaling', minimum: 2, maximum: 20, initial: 4 },
    });
  });

  it('names every invalid variable in one error', () => {
    expect(() =>
      readWorkerTuning({
        AGENT_MAX_CONCURRENT_WORKFLOW_TASKS: '1',
        AGENT_ACTIVITY_TASK_POLLERS: 'auto:5:2:3',
        AGENT_MAX_CACHED_WORKFLOWS: 'lots',
      }),
    ).toThrow(
      /AGENT_MAX_CACHED_WORKFLOWS: must be an integer >= 0, got "lots".*AGENT_MAX_CONCURRENT_WORKFLOW_TASKS: must be an integer >= 2.*AGENT_ACTIVITY_TASK_POLLERS: auto:MIN:MAX:INITIAL needs MIN <= INITIAL <= MAX/,
    );
  });

  it('every tuning variable is a documented worker variable (compose may set it)', () => {
    for (const name of [
      'AGENT_MAX_CACHED_WORKFLOWS',
      'AGENT_MAX_CONCURRENT_WORKFLOW_TASKS',
      'AGENT_MAX_CONCURRENT_ACTIVITIES',
      'AGENT_WORKFLOW_TASK_POLLERS',
      'AGENT_ACTIVITY_TASK_POLLERS',
      'AGENT_STICKY_SCHEDULE_TO_START_MS',
    ]) {
      expect(WORKER_ENV_VARS).toContain(name);
    }
  });
});
