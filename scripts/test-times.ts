/**
 * `tsx scripts/test-times.ts [<before.json>] <after.json> [--top N]`: the wall time of a whole
 * jest run and its slowest test files (10 unless --top), from jest's own
 * `--json --outputFile=<file>`:
 *
 *   nice -n 5 npx jest --json --outputFile=/tmp/after.json
 *   npx tsx scripts/test-times.ts /tmp/before.json /tmp/after.json
 *
 * With two files (an earlier run first) each slow file of the later run also shows its time
 * in the earlier one, and the table ends with both runs' totals. The time of a file is jest's (from the file's start to
 * its end, setup and teardown included), so files that ran side by side overlap: the sum of
 * the files is larger than the wall time, which runs from jest's start to its last file's end.
 * Exit 0; 2 when a file cannot be read or is not jest's JSON.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

interface JestFileResult {
  name: string;
  status: string;
  startTime: number;
  endTime: number;
}
interface JestJson {
  startTime: number;
  numFailedTests: number;
  numTotalTests: number;
  testResults: JestFileResult[];
}

/** One jest run: its wall time, its files' times (ms) by path and its failed-test count. */
export interface TestRunTimes {
  wallMs: number;
  files: Map<string, number>;
  failed: number;
  tests: number;
}

/** Reads jest's `--json` output; throws a clear error on anything else. */
export function readTestRun(file: string): TestRunTimes {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Partial<JestJson>;
  if (!Array.isArray(raw.testResults) || typeof raw.startTime !== 'number')
    throw new Error(`${file} is not jest's --json output (no testResults/startTime)`);
  const files = new Map<string, number>();
  let end = raw.startTime;
  for (const r of raw.testResults) {
    files.set(relative(process.cwd(), r.name), r.endTime - r.startTime);
    end = Math.max(end, r.endTime);
  }
  return {
    wallMs: end - raw.startTime,
    files,
    failed: raw.numFailedTests ?? 0,
    tests: raw.numTotalTests ?? 0,
  };
}

const seconds = (ms: number | undefined): string => (ms === undefined ? '—' : `${(ms / 1000).toFixed(1)} s`);

/** The table: the `top` slowest files of `after`, with their time in `before` when given. */
export function formatTimes(after: TestRunTimes, before: TestRunTimes | null, top: number): string {
  const rows = [...after.files.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  const width = Math.max(4, ...rows.map(([name]) => name.length));
  const head = before
    ? ['file'.padEnd(width), 'before'.padStart(9), 'after'.padStart(9)]
    : ['file'.padEnd(width), 'time'.padStart(9)];
  const lines = [head.join('  ')];
  for (const [name, ms] of rows) {
    const cells = [
      name.padEnd(width),
      ...(before ? [seconds(before.files.get(name)).padStart(9)] : []),
      seconds(ms).padStart(9),
    ];
    lines.push(cells.join('  '));
  }
  const sum = (r: TestRunTimes): number => [...r.files.values()].reduce((a, b) => a + b, 0);
  const total = (label: string, r: TestRunTimes): string =>
    `${label}: wall ${seconds(r.wallMs)}, ${r.files.size} files (sum ${seconds(sum(r))}), ${r.tests} tests, ${r.failed} failed`;
  if (before) lines.push('', total('before', before));
  lines.push(total(before ? 'after ' : 'run', after));
  return lines.join('\n');
}

function main(argv: string[]): number {
  const files: string[] = [];
  let top = 10;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--top') top = Number(argv[++i]);
    else files.push(argv[i] as string);
  }
  if (!Number.isInteger(top) || top < 1 || files.length < 1 || files.length > 2) {
    process.stderr.write('usage: tsx scripts/test-times.ts [<before.json>] <after.json> [--top N]\n');
    return 2;
  }
  try {
    const after = readTestRun(files[files.length - 1] as string);
    const before = files.length === 2 ? readTestRun(files[0] as string) : null;
    process.stdout.write(`${formatTimes(after, before, top)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`test-times: ${(err as Error).message}\n`);
    return 2;
  }
}

process.exitCode = main(process.argv.slice(2));
