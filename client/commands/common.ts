/** The context every agentctl command gets, and the option parsers and lookups they share. */
import { InvalidArgumentError, Option } from 'commander';
import type { WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import { guardConfigSchema, LLM_PROFILE, type BudgetKey } from '../../guard';
import { ledgerUrlFromEnv } from '../../storage/ledger';
import { connect, type Connected } from '../connect';
import { runCounters, type Counters } from '../counters';
import { formatCounters, stdio, uiBaseFor, uiLink, type Output } from '../format';
import { describeRun } from '../runs';

/** Context every command gets. */
export interface Ctx {
  readonly env: NodeJS.ProcessEnv;
  readonly io: Output;
  /** Connects lazily (once); exit 4 when unreachable. */
  connect(): Promise<Connected>;
}

/** A context over the process (or test overrides). */
export function makeCtx(o: Partial<Pick<Ctx, 'env' | 'io'>> = {}): Ctx & { close(): Promise<void> } {
  const env = o.env ?? process.env;
  let conn: Promise<Connected> | null = null;
  return {
    env,
    io: o.io ?? stdio,
    connect: () => (conn ??= connect(env)),
    async close() {
      if (conn) await (await conn.catch(() => null))?.close();
    },
  };
}

/** An existing run, with the connection it was found on. */
export interface OpenedRun {
  readonly c: Connected;
  readonly handle: WorkflowHandle;
  readonly desc: WorkflowExecutionDescription;
}

/** Connects and looks the run up (exit 1 "no run with id", exit 4 when unreachable). */
export async function openRun(ctx: Ctx, id: string): Promise<OpenedRun> {
  const c = await ctx.connect();
  return { c, ...(await describeRun(c.client, id)) };
}

/** The Web UI link of a run on the server `c` is connected to. */
export function runLink(ctx: Ctx, c: Connected, workflowId: string): string {
  return uiLink(uiBaseFor(c.address, ctx.env), c.namespace, workflowId);
}

/** commander parser: a positive integer. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

/** commander parser: a non-negative integer. */
export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
}

/** commander parser: a positive number. */
export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number');
  return n;
}

/** How one guard budget is spelled on the command line: `--max-<flag>` (start), `--raise-<flag>` (resume). */
interface BudgetFlag {
  readonly flag: string;
  readonly arg: string;
  readonly parse: (value: string) => number;
  /** `start --max-…` help. */
  readonly max: string;
  /** `resume --raise-…` help. */
  readonly raise: string;
}

/** The budgets a scripted run starts with (the guard's defaults) and an LLM run's (the `llm` profile). */
const SCRIPTED_BUDGETS = guardConfigSchema.parse({});
const LLM_BUDGETS = guardConfigSchema.parse(LLM_PROFILE);

/** `(default …)` of one budget, per kind of run, from the guard's own defaults: never out of date. */
function defaults(key: BudgetKey, unit = ''): string {
  const show = (v: number) =>
    Number.isFinite(v) ? `${unit === '$' ? '$' : ''}${v}${unit === '$' ? '' : unit}` : 'unlimited';
  const scripted = show(SCRIPTED_BUDGETS[key]);
  const llm = show(LLM_BUDGETS[key]);
  return scripted === llm
    ? `(default ${scripted})`
    : `(default ${scripted} for a scripted run, ${llm} for an LLM run: the llm profile)`;
}

/**
 * The budgets a run starts with and a resume may raise, keyed like the guard's config
 * (`BUDGET_RAISE_KEY` in guard/reasons.ts), so `start` and `resume` parse them alike.
 */
export const BUDGET_FLAGS: Readonly<Record<BudgetKey, BudgetFlag>> = {
  maxSteps: {
    flag: 'steps',
    arg: 'n',
    parse: positiveInt,
    max: `step budget ${defaults('maxSteps')}`,
    raise: 'raise the step budget to n',
  },
  maxMs: {
    flag: 'ms',
    arg: 'ms',
    parse: positiveNumber,
    max: `wall-clock budget in ms ${defaults('maxMs')}`,
    raise: 'raise the wall-clock budget to ms',
  },
  maxTokens: {
    flag: 'tokens',
    arg: 'n',
    parse: positiveNumber,
    max: `token budget ${defaults('maxTokens')}`,
    raise: 'raise the token budget to n',
  },
  maxCostUsd: {
    flag: 'cost-usd',
    arg: 'usd',
    parse: positiveNumber,
    max: `cost budget in USD ${defaults('maxCostUsd', '$')}`,
    raise: 'raise the cost budget to usd',
  },
  maxWaitPolls: {
    flag: 'wait-polls',
    arg: 'n',
    parse: positiveInt,
    max: `honoured re-polls per call (a job that answers "not done yet") ${defaults('maxWaitPolls')}`,
    raise: 'raise the honoured-poll budget to n',
  },
};

/**
 * The option of one budget: `--max-steps <n>` (its value lands on `maxSteps`) or
 * `--raise-steps <n>` (on `raiseSteps`).
 */
export function budgetOption(key: BudgetKey, kind: 'max' | 'raise'): Option {
  const b = BUDGET_FLAGS[key];
  return new Option(`--${kind}-${b.flag} <${b.arg}>`, b[kind]).argParser(b.parse);
}

/**
 * A run's tool counters as status, `start --wait` and `resume --wait` show them: the runtime's
 * counters in the worker's database (LEDGER_URL; the demo's WORLD_URL when only it is set, the
 * demo keeping both in one file); null when that database is not on this machine.
 */
export function countersOf(ctx: Ctx, runId: string): Promise<Counters | null> {
  return runCounters(runId, { ledgerUrl: countersUrl(ctx) });
}

/** Where {@link countersOf} reads the counters: LEDGER_URL, the demo's WORLD_URL, else the default ledger. */
export function countersUrl(ctx: Ctx): string {
  const env = ctx.env;
  return env.LEDGER_URL || (env.WORLD_URL?.startsWith('sqlite:') ? env.WORLD_URL : ledgerUrlFromEnv(env));
}

/** The counters as text; when they cannot be read, where they were looked for and how to point there. */
export function countersText(ctx: Ctx, counters: Counters | null): string {
  if (counters) return formatCounters(counters);
  const url = countersUrl(ctx);
  const shown = url.startsWith('sqlite:') ? url : url.replace(/\/\/[^@/]*@/, '//');
  return `(unknown: no ledger at ${shown} here; set LEDGER_URL to the workers' ledger)`;
}

/** The operator name: --actor, else $USER. */
export function defaultActor(env: NodeJS.ProcessEnv): string {
  return env.AGENTCTL_ACTOR || env.USER || env.USERNAME || 'operator';
}
