/** Shared option parsers and the command runner of agentctl. */
import { InvalidArgumentError } from 'commander';
import { readWorkerEnv } from '../../worker/env';
import { connect, type Connected } from '../connect';
import { stdio, type Output } from '../format';

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

/** The world URL the local worker writes counters to (WORLD_URL / LEDGER_URL defaults). */
export function worldUrlOf(env: NodeJS.ProcessEnv): string {
  return readWorkerEnv(env).worldUrl;
}

/** The operator name: --actor, else $USER. */
export function defaultActor(env: NodeJS.ProcessEnv): string {
  return env.AGENTCTL_ACTOR || env.USER || env.USERNAME || 'operator';
}
