/**
 * The root entry (index.ts) is a curated list: what a program needs to define tools, host them in
 * a worker, start and steer runs, and the errors it catches. Everything else is on a subpath
 * (index.ts says which). A name added to the root, or dropped from it, fails here: the change is
 * then made on purpose, in this list, index.ts and CHANGELOG.md together.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import * as root from '../../index';

const ROOT = join(__dirname, '..', '..');

/** The values the root exports, by group (index.ts has the same groups). */
const VALUES = {
  errors: ['AgentLoopGuardError', 'isAgentLoopGuardError'],
  tools: ['defineTool', 'FatalToolError', 'PreconditionToolError', 'RetryableToolError', 'ToolError'],
  worker: [
    'AgentLoopGuardPlugin',
    'connectToTemporal',
    'createAgentWorker',
    'loadConnectionOptions',
    'openLedger',
    'openWorkerDeps',
  ],
  runs: [
    'approveRun',
    'connectClient',
    'denyRun',
    'getAgentRunReport',
    'getAgentRunResult',
    'getAgentRunStatus',
    'getAgentRunTrace',
    'getPendingApproval',
    'guardProfile',
    'listPendingApprovals',
    'resumeAgentRun',
    'runResultOf',
    'startAgentRun',
    'stopAgentRun',
    'waitForAgentRun',
  ],
  clientErrors: ['CliError', 'Exit', 'NotAGuardedRunError', 'PayloadCodecMismatchError'],
};

/** The types the root exports (`export type`), by group. */
const TYPES = {
  tools: ['AnyTool', 'ToolContext', 'ToolDefinition', 'ToolReturn'],
  worker: [
    'AgentLoopGuardPluginOptions',
    'AgentWorkerOptions',
    'ConnectionSettings',
    'ConnectToTemporalOptions',
    'Ledger',
    'OpenLedgerOptions',
    'WorkerDeps',
    'WorkerDepsOptions',
  ],
  runs: [
    'AgentRunSettled',
    'ApproveRunOptions',
    'ApproveRunResult',
    'Connected',
    'DecideOptions',
    'DenyRunResult',
    'GuardConfigInput',
    'GuardProfileName',
    'ListPendingOptions',
    'PendingApproval',
    'PlannerSpec',
    'ResumeAgentRunOptions',
    'RunInput',
    'RunResult',
    'RunStatus',
    'StartAgentRunOptions',
    'StopAgentRunOptions',
    'StopAgentRunResult',
    'StopReport',
    'TracePage',
    'TracePageArgs',
  ],
  clientErrors: ['ExitCode'],
};

const sorted = (groups: Record<string, string[]>): string[] => Object.values(groups).flat().sort();

/** index.ts's export declarations, read as written: the type-only names and every statement's kind. */
function declaredExports(): { types: string[]; values: string[]; other: string[] } {
  const file = join(ROOT, 'index.ts');
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const out = { types: [] as string[], values: [] as string[], other: [] as string[] };
  for (const st of src.statements) {
    if (!ts.isExportDeclaration(st) || !st.exportClause || !ts.isNamedExports(st.exportClause)) {
      out.other.push(st.getText(src).slice(0, 80));
      continue;
    }
    for (const el of st.exportClause.elements) {
      (st.isTypeOnly || el.isTypeOnly ? out.types : out.values).push(el.name.text);
    }
  }
  return { types: out.types.sort(), values: out.values.sort(), other: out.other };
}

describe('the root entry', () => {
  it('is named re-exports only (no `export *`, nothing defined in it)', () => {
    expect(declaredExports().other).toEqual([]);
  });

  it('exports exactly the curated values', () => {
    expect(Object.keys(root).sort()).toEqual(sorted(VALUES));
    expect(declaredExports().values).toEqual(sorted(VALUES));
  });

  it('exports exactly the curated types', () => {
    expect(declaredExports().types).toEqual(sorted(TYPES));
  });

  it('stays small: a user reads it in one sitting', () => {
    expect(sorted(VALUES).length).toBeLessThanOrEqual(40);
    expect(sorted(TYPES).length).toBeLessThanOrEqual(40);
  });

  it('every subpath of package.json "exports" is built from a source file', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, string | { types: string; default: string }>;
    };
    const missing = Object.entries(pkg.exports)
      .filter((e): e is [string, { types: string; default: string }] => typeof e[1] !== 'string')
      .map(([sub, t]) => [sub, t.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts')])
      .filter(([, source]) => !existsSync(join(ROOT, source!)));
    expect(missing).toEqual([]);
  });
});
