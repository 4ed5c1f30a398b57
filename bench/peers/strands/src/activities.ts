/**
 * The tools' activities. Each side effect is a line appended to a file, so the counts survive
 * a SIGKILLed worker. PAY_MODE: 'ok' (append, return), 'kill' (append, write a marker, then
 * hang until the bench SIGKILLs the worker), 'slow' (append, then outlive any timeout).
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = (): string => process.env.DATA_DIR ?? '.';
const mode = (): string => process.env.PAY_MODE ?? 'ok';

export async function readDoc(input: { path: string }): Promise<string> {
  appendFileSync(join(dir(), 'reads.log'), `${input.path}\n`);
  return `contents of ${input.path}: (the same 40 bytes every time)`;
}

export async function pay(input: { to: string; amountCents: number }): Promise<string> {
  appendFileSync(join(dir(), 'payments.log'), `${Date.now()} ${input.to} ${input.amountCents}\n`);
  if (mode() === 'kill') {
    writeFileSync(join(dir(), 'paid.marker'), 'paid');
    await new Promise(() => undefined); // hang: the bench kills this worker now
  }
  if (mode() === 'slow') {
    await new Promise((r) => setTimeout(r, 6 * 60_000)); // outlives the 60 s timeout
  }
  return `paid ${input.amountCents} cents to ${input.to}`;
}
