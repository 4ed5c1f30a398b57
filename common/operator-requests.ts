/**
 * What an operator sends a run (docs/spec.md §7.3–7.4): the `resume` and `stop` requests, their
 * answers, and the budgets a resume may raise. Sandbox-safe; re-exported by common/contracts.ts.
 */
import { z } from 'zod';
import { operatorAuthSchema } from './operator-auth';

/** Budgets an operator may raise on resume. */
export const budgetRaiseSchema = z
  .object({
    maxSteps: z.number().int().positive().optional(),
    maxMs: z.number().positive().optional(),
    maxTokens: z.number().positive().optional(),
    maxCostUsd: z.number().positive().optional(),
    maxWaitPolls: z.number().int().positive().optional(),
  })
  .strict();
/** Budget raise. */
export type BudgetRaise = z.output<typeof budgetRaiseSchema>;

/** Payload of the `resume` signal and update. */
/** The most characters of a resume's note to the model. */
export const MAX_RESUME_NOTE_CHARS = 2_000;

/**
 * An operator's note to the model: plain text (newlines and tabs allowed, no other control
 * characters, which could hide text from the person reading the trace), bounded.
 */
export const resumeNoteSchema = z
  .string()
  .min(1, 'note is empty')
  .max(MAX_RESUME_NOTE_CHARS, `note is longer than ${MAX_RESUME_NOTE_CHARS} characters`)
  .refine((t) => !/[\u0000-\u0008\u000b-\u001f\u007f]/.test(t), 'note has control characters');

export const resumeRequestSchema = z
  .object({
    actor: z.string().min(1, 'actor is required'),
    reason: z.string().min(1, 'reason is required'),
    /** What the operator says changed (free text, recorded; the workflow re-verifies it). */
    precondition: z.string().default(''),
    requestId: z.string().min(1, 'requestId is required'),
    raise: budgetRaiseSchema.optional(),
    /** What the operator tells the model with the resume (core/resume-note.ts); signed. */
    note: resumeNoteSchema.optional(),
    /** The operator's signature (required when the worker has operators configured). */
    auth: operatorAuthSchema.optional(),
  })
  .strict();
/** A resume request. */
export type ResumeRequest = z.input<typeof resumeRequestSchema>;

/** Payload of the `stop` signal (the kill switch). */
export const stopRequestSchema = z
  .object({
    actor: z.string().min(1, 'actor is required'),
    reason: z.string().min(1, 'reason is required'),
    requestId: z.string().min(1, 'requestId is required'),
    /** The operator's signature (required when the worker has operators configured). */
    auth: operatorAuthSchema.optional(),
  })
  .strict();
/** A stop request. */
export type StopRequest = z.input<typeof stopRequestSchema>;

/** The answer to a resume. */
export interface ResumeAnswer {
  readonly accepted: boolean;
  readonly reason: string;
  readonly progressVersion: number;
}

/**
 * The answer to a stop (the `stop` update): `accepted` when the worker took it (the
 * run stops before its next tool call, or the resume being verified is vetoed), else why not
 * (not authorised, not running, a duplicate request id).
 */
export interface StopAnswer {
  readonly accepted: boolean;
  readonly reason: string;
}
