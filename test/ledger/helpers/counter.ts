/**
 * The fake side effect's execution counter: one line appended to a file per execution.
 * O_APPEND writes are atomic for short lines, so concurrent processes cannot lose a count,
 * and the file survives a SIGKILL — it is a real count, not a mock's.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Appends one execution of `key` to the counter file in `dir`. */
export function bump(dir: string, key: string): void {
  fs.appendFileSync(path.join(dir, 'executions.log'), `${key}\n`);
}

/** How many times the side effect for `key` ran (all keys when omitted). */
export function executions(dir: string, key?: string): number {
  const file = path.join(dir, 'executions.log');
  if (!fs.existsSync(file)) return 0;
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
  return key === undefined ? lines.length : lines.filter((l) => l === key).length;
}
