/**
 * The lint's rooms (eslint.config.js, docs/architecture.md "Where code runs"): replayed code —
 * workflows/, common/, core/ and every framework adapter's folder but its worker.ts — may not
 * import Node, the file system or worker/client/activity code (types only), so a workflow-unsafe
 * import is refused by `npm run lint` before a bundle could fail on it, or worse, replay differently.
 */
import { ESLint } from 'eslint';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
type Entry = {
  languageOptions?: { parserOptions?: Record<string, unknown> };
  rules?: Record<string, unknown>;
};
// The repository's own config, given directly (jest's VM cannot load it by dynamic import),
// without its type-aware part: the import rules need no type information, and the project
// service would refuse a file that does not exist yet.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the config is CommonJS
const config = (require(join(ROOT, 'eslint.config.js')) as Entry[]).map((entry) => {
  const parserOptions = entry.languageOptions?.parserOptions;
  if (!parserOptions?.projectService) return entry;
  const { projectService: _service, tsconfigRootDir: _root, ...rest } = parserOptions;
  const { '@typescript-eslint/no-floating-promises': _typed, ...rules } = entry.rules ?? {};
  return { ...entry, languageOptions: { ...entry.languageOptions, parserOptions: rest }, rules };
});
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: true,
  overrideConfig: config as ESLint.Options['overrideConfig'],
});

/** The rule ids that refuse `code` as the file `path` of the repository. */
async function refusals(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

describe('where code runs, enforced by the lint', () => {
  it.each([
    ['core/new-concept.ts', "import { readFileSync } from 'node:fs';\nexport const f = readFileSync;\n"],
    [
      'ai-sdk/new-concept.ts',
      "import { openLedger } from '../storage/ledger';\nexport const f = openLedger;\n",
    ],
    [
      'openai-agents/new-concept.ts',
      "import { ledgerWrites } from '../worker/ledger-writes';\nexport const f = ledgerWrites;\n",
    ],
    ['strands-agents/index.ts', "import { Client } from '@temporalio/client';\nexport const f = Client;\n"],
    [
      'workflows/new-concept.ts',
      "import { agentRunResult } from '../client/runs';\nexport const f = agentRunResult;\n",
    ],
  ])('%s: a workflow-unsafe import is refused', async (path, code) => {
    const found = await refusals(path, code);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^no-restricted-imports: .*(sandbox-safe|types only)/);
  });

  it("a type import of the worker half, and an adapter's worker.ts importing Node, are allowed", async () => {
    expect(
      await refusals(
        'core/new-concept.ts',
        "import type { Ledger } from '../storage/ledger';\nexport type L = Ledger;\n",
      ),
    ).toEqual([]);
    expect(
      await refusals(
        'openai-agents/worker.ts',
        "import { readFileSync } from 'node:fs';\nexport const f = readFileSync;\n",
      ),
    ).toEqual([]);
  });
});
