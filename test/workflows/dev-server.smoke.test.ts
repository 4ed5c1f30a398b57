import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { createTestEnv, TEST_NAMESPACE } from '../helpers/temporal-env';

describe('Temporal dev server (test environment)', () => {
  let env: TestWorkflowEnvironment | undefined;

  beforeAll(async () => {
    env = await createTestEnv();
  }, 120_000);

  afterAll(async () => {
    await env?.teardown();
  });

  it('answers and has the default namespace', async () => {
    const ns = await env!.connection.workflowService.describeNamespace({ namespace: TEST_NAMESPACE });
    expect(ns.namespaceInfo?.name).toBe(TEST_NAMESPACE);
  });

  it('has the three agent search attributes with their types', async () => {
    const res = await env!.connection.operatorService.listSearchAttributes({ namespace: TEST_NAMESPACE });
    const custom = res.customAttributes ?? {};
    // IndexedValueType enum: 2 = KEYWORD, 3 = INT
    const expected: Record<string, number> = { Keyword: 2, Int: 3 };
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
      expect(custom).toHaveProperty(name);
      expect(custom[name]).toBe(expected[type]);
    }
  });
});
