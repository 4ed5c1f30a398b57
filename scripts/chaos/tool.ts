/**
 * `chaos_write`: the write tool of the chaos run. Its side effect is one row in
 * `chaos_effects` (scripts/chaos/effects.ts), then a short random pause, so a SIGKILL has a
 * real chance to land between the side effect and the ledger's commit — the window that
 * must end UNKNOWN, never in a second execution.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import { z } from 'zod';
import { defineTool, type AnyTool } from '../../tools/define-tool';

/** The write tool's name, as the chaos scripts propose it. */
export const CHAOS_TOOL = 'chaos_write';
/**
 * The read that ends a chaos run (terminal). A run does not end on its last write because a
 * write answered from the ledger loses `terminal` (reported in docs/chaos.md "Findings"), and
 * the scripted planner never re-proposes a write that came back RETRYABLE.
 */
export const CHAOS_DONE_TOOL = 'chaos_done';

/** The terminal read: no side effect, so never answered from the ledger. */
export function createChaosDoneTool(): AnyTool {
  return defineTool({
    name: CHAOS_DONE_TOOL,
    description: 'Chaos run only: end the run.',
    effect: 'read',
    schema: z.object({ run: z.string().min(1) }).strict(),
    execute: () => ({ data: { done: true }, terminal: true }),
  });
}

/** Errors raised before the INSERT reached the server: the row was certainly not written. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', '57P03' /* cannot_connect_now */, '53300']);

function notSent(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return (
    (typeof e.code === 'string' && NOT_SENT.has(e.code)) ||
    (typeof e.message === 'string' && /timeout exceeded when trying to connect/.test(e.message))
  );
}

/** Options of {@link createChaosTool}. */
export interface ChaosToolOptions {
  /** Longest pause after the side effect, before the tool returns (ms). */
  readonly maxPauseMs: number;
}

/** Builds the tool over the effects database. */
export function createChaosTool(effects: Pool, options: ChaosToolOptions): AnyTool {
  return defineTool({
    name: CHAOS_TOOL,
    description: 'Chaos run only: record one side effect for the operation key.',
    effect: 'write',
    schema: z
      .object({ run: z.string().min(1), n: z.number().int().min(0), final: z.boolean().optional() })
      .strict(),
    operationKey: (a) => `chaos:${a.run}:${a.n}`,
    async execute(args, ctx) {
      ctx.heartbeat();
      // A connection that was never made sent nothing, so retrying the INSERT is safe; an error
      // after the statement was sent is not retried here (it may have been written).
      for (let attempt = 0; ; attempt++) {
        try {
          await effects.query('INSERT INTO chaos_effects (op_key, run_id, pid) VALUES ($1, $2, $3)', [
            ctx.operationKey,
            ctx.runId,
            process.pid,
          ]);
          break;
        } catch (err) {
          if (!notSent(err) || attempt >= 40 || ctx.signal.aborted) throw err;
          ctx.heartbeat();
          await sleep(250);
        }
      }
      await sleep(Math.floor(Math.random() * options.maxPauseMs));
      return { data: { n: args.n }, terminal: args.final === true };
    },
  });
}
