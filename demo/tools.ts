/**
 * The demo tools over the {@link World}: the tool set `npm run demo` and the tests drive.
 * Each one counts its real executions in the world, so a test can assert that a guarded
 * or deduplicated call did not run.
 */
import { z } from 'zod';
import { hash64 } from '../guard';
import { defineTool, type AnyTool } from '../tools/define-tool';
import { FatalToolError, PreconditionToolError } from '../tools/errors';
import type { World } from './world';

/** Options of the demo tool set. */
export interface DemoToolOptions {
  /** How long a running job asks to be polled again after (ms). */
  readonly pollAfterMs?: number;
}

/** Builds the demo tools bound to a world. */
export function createDemoTools(world: World, options: DemoToolOptions = {}): AnyTool[] {
  const pollAfterMs = options.pollAfterMs ?? 500;

  const search = defineTool({
    name: 'search',
    description: 'Search the document index. Page with the returned nextCursor.',
    effect: 'read',
    schema: z
      .object({
        query: z.string().min(1),
        cursor: z.string().regex(/^\d+$/).optional(),
        limit: z.number().int().min(1).max(10).default(3),
        requestId: z.string().optional(),
      })
      .strict(),
    nonSemantic: ['requestId'],
    // The same question in other words is a repeat (docs/spec.md §3, Near repeats).
    similarArgs: ['query'],
    async execute(args, ctx) {
      await world.countCall(ctx.runId, 'search', ctx.tx);
      const offset = Number(args.cursor ?? '0');
      const q = args.query.trim().toLowerCase();
      const docs = await ctx.tx.all<{ id: string; title: string }>(
        `SELECT id, title FROM world_docs WHERE lower(topic) = ? OR lower(title) LIKE ? OR lower(body) LIKE ?
         ORDER BY id LIMIT ? OFFSET ?`,
        [q, `%${q}%`, `%${q}%`, args.limit + 1, offset],
      );
      const page = docs.slice(0, args.limit);
      // A document a run has not seen before is a new fact: external, verifiable progress.
      for (const d of page) {
        await ctx.tx.run('INSERT OR IGNORE INTO world_facts (run_id, fact) VALUES (?, ?)', [ctx.runId, d.id]);
      }
      const nextCursor = docs.length > args.limit ? String(offset + args.limit) : null;
      return { data: { docs: page, nextCursor } };
    },
  });

  const readRecord = defineTool({
    name: 'read_record',
    description: 'Read a record by id.',
    effect: 'read',
    schema: z.object({ id: z.string().min(1) }).strict(),
    async execute(args, ctx) {
      await world.countCall(ctx.runId, 'read_record', ctx.tx);
      const row = await ctx.tx.get<{ body: string; version: number }>(
        'SELECT body, version FROM world_records WHERE id = ?',
        [args.id],
      );
      if (!row) throw new PreconditionToolError(`record ${args.id} does not exist`, 'not_found');
      return { data: { id: args.id, body: row.body, version: Number(row.version) } };
    },
  });

  const writeRecord = defineTool({
    name: 'write_record',
    description: 'Create or replace a record.',
    effect: 'write',
    atomicWithLedger: true,
    schema: z.object({ id: z.string().min(1), body: z.string() }).strict(),
    operationKey: (a) => `record:${a.id}:${hash64(a.body)}`,
    async execute(args, ctx) {
      await world.countCall(ctx.runId, 'write_record', ctx.tx);
      await ctx.tx.run(
        `INSERT INTO world_records (id, body, version) VALUES (?, ?, 1)
         ON CONFLICT (id) DO UPDATE SET body = excluded.body, version = world_records.version + 1`,
        [args.id, args.body],
      );
      await world.bump(ctx.tx);
      return { data: { id: args.id, written: true } };
    },
  });

  const sendNotification = defineTool({
    name: 'send_notification',
    description: 'Page a channel about an incident. One page per channel, incident and type.',
    effect: 'write',
    atomicWithLedger: true,
    schema: z
      .object({
        channel: z.string().min(1),
        incident: z.string().min(1),
        type: z.enum(['page', 'update', 'resolved']),
        message: z.string().min(1),
      })
      .strict(),
    operationKey: (a) => `notify:${a.channel}:${a.incident}:${a.type}`,
    async execute(args, ctx) {
      await world.countCall(ctx.runId, 'send_notification', ctx.tx);
      await ctx.tx.run(
        'INSERT INTO world_notifications (op_key, channel, message, run_id) VALUES (?, ?, ?, ?)',
        [ctx.operationKey, args.channel, args.message, ctx.runId],
      );
      await world.bump(ctx.tx);
      return { data: { sent: true, channel: args.channel } };
    },
  });

  const chargePayment = defineTool({
    name: 'charge_payment',
    description: 'Charge a customer for an invoice (the payment vendor dedupes by idempotency key).',
    effect: 'write',
    vendorIdempotent: true,
    schema: z
      .object({
        customer: z.string().min(1),
        invoice: z.string().min(1),
        amountCents: z.number().int().positive(),
        currency: z.enum(['EUR', 'USD', 'GBP']),
      })
      .strict(),
    operationKey: (a) => `charge:${a.invoice}`,
    async execute(args, ctx) {
      // The "vendor" honours the idempotency key: a second request with it charges nothing.
      const inserted = await ctx.tx.run(
        'INSERT OR IGNORE INTO world_payments (op_key, customer, amount_cents, currency) VALUES (?, ?, ?, ?)',
        [ctx.operationKey, args.customer, args.amountCents, args.currency],
      );
      if (inserted.changes > 0) {
        await world.countCall(ctx.runId, 'charge_payment', ctx.tx);
        await world.bump(ctx.tx);
      }
      return { data: { charged: true, invoice: args.invoice } };
    },
  });

  const startJob = defineTool({
    name: 'start_job',
    description: 'Start a long job; poll it with poll_job.',
    effect: 'write',
    atomicWithLedger: true,
    schema: z
      .object({ name: z.string().min(1), pollsNeeded: z.number().int().min(1).max(20).default(2) })
      .strict(),
    operationKey: (a) => `job:${a.name}`,
    async execute(args, ctx) {
      await world.countCall(ctx.runId, 'start_job', ctx.tx);
      await ctx.tx.run('INSERT INTO world_jobs (id, polls_needed, polls, state) VALUES (?, ?, 0, ?)', [
        args.name,
        args.pollsNeeded,
        'running',
      ]);
      await world.bump(ctx.tx);
      return { data: { jobId: args.name } };
    },
  });

  const pollJob = defineTool({
    name: 'poll_job',
    description: 'Poll a job started with start_job.',
    effect: 'read',
    schema: z.object({ jobId: z.string().min(1) }).strict(),
    async execute(args, ctx) {
      await world.countCall(ctx.runId, 'poll_job', ctx.tx);
      const job = await ctx.tx.get<{ polls_needed: number; polls: number; state: string }>(
        'SELECT polls_needed, polls, state FROM world_jobs WHERE id = ?',
        [args.jobId],
      );
      if (!job) throw new PreconditionToolError(`job ${args.jobId} was never started`, 'not_found');
      if (job.state === 'done') return { data: { jobId: args.jobId, state: 'done' } };
      const polls = Number(job.polls) + 1;
      if (polls >= Number(job.polls_needed)) {
        await ctx.tx.run("UPDATE world_jobs SET polls = ?, state = 'done' WHERE id = ?", [polls, args.jobId]);
        await world.bump(ctx.tx);
        return { data: { jobId: args.jobId, state: 'done' } };
      }
      await ctx.tx.run('UPDATE world_jobs SET polls = ? WHERE id = ?', [polls, args.jobId]);
      return { kind: 'PENDING', code: 'job_running', retryAfterMs: pollAfterMs, ref: args.jobId };
    },
  });

  const deploy = defineTool({
    name: 'deploy',
    description: 'Deploy a service version. Needs the deploy:<service> permission.',
    effect: 'write',
    atomicWithLedger: true,
    schema: z.object({ service: z.string().min(1), version: z.string().min(1) }).strict(),
    operationKey: (a) => `deploy:${a.service}:${a.version}`,
    async checkPrecondition(args, tx) {
      const permission = `deploy:${args.service}`;
      return (await world.hasPermission(permission, tx)) ? null : `write permission ${permission} is missing`;
    },
    async execute(args, ctx) {
      const permission = `deploy:${args.service}`;
      if (!(await world.hasPermission(permission, ctx.tx))) {
        throw new FatalToolError(`write permission ${permission} is missing`, 'permission_denied');
      }
      await world.countCall(ctx.runId, 'deploy', ctx.tx);
      await ctx.tx.run('INSERT INTO world_deploys (op_key, service, version) VALUES (?, ?, ?)', [
        ctx.operationKey,
        args.service,
        args.version,
      ]);
      await world.bump(ctx.tx);
      return { data: { deployed: `${args.service}@${args.version}` } };
    },
  });

  const transferFunds = defineTool({
    name: 'transfer_funds',
    description:
      "Move money between two accounts. High risk: every call needs a person's approval of the exact transfer.",
    effect: 'write',
    atomicWithLedger: true,
    // The run stops NEEDS_HUMAN approval_required until `agentctl approvals approve` (docs/security.md).
    requiresApproval: true,
    // The console shows 12500 as 125.00 EUR (tools/arg-display.ts).
    display: { amountCents: { unit: 'EUR', scale: 100 } },
    schema: z
      .object({
        from: z.string().min(1),
        to: z.string().min(1),
        amountCents: z.number().int().positive(),
        reference: z.string().min(1),
      })
      .strict(),
    operationKey: (a) => `transfer:${a.reference}`,
    async execute(args, ctx) {
      await world.countCall(ctx.runId, 'transfer_funds', ctx.tx);
      await ctx.tx.run(
        'INSERT INTO world_payments (op_key, customer, amount_cents, currency) VALUES (?, ?, ?, ?)',
        [ctx.operationKey, `${args.from}->${args.to}`, args.amountCents, 'EUR'],
      );
      await world.bump(ctx.tx);
      return { data: { transferred: args.amountCents, from: args.from, to: args.to } };
    },
  });

  const completeTask = defineTool({
    name: 'complete_task',
    description: 'Declare the goal met, with a summary. Ends the run.',
    effect: 'read',
    schema: z.object({ summary: z.string().min(1) }).strict(),
    async execute(args, ctx) {
      await world.countCall(ctx.runId, 'complete_task', ctx.tx);
      return { data: { summary: args.summary }, terminal: true };
    },
  });

  return [
    search,
    readRecord,
    writeRecord,
    sendNotification,
    chargePayment,
    startJob,
    pollJob,
    deploy,
    transferFunds,
    completeTask,
  ];
}
