/**
 * `npm run chaos`: a fleet under fire (docs/chaos.md). Starts a dev server (state in a
 * file), a private PostgreSQL and 3 workers, runs a few hundred live write runs while it
 * SIGKILLs workers, restarts the dev server and PostgreSQL, then checks the invariants and
 * prints them as a table. Exits 1 on any violation. Bounded (≤ 5 minutes), loopback only.
 *
 * Flags: --runs N (200)  --workers N (3)  --kills N (12)  --writes N (3)  --json
 */
import { DEFAULT_CHAOS_OPTIONS, runChaos, type ChaosOptions } from './chaos/run-chaos';
import { formatReport } from './chaos/invariants';

function parseArgs(argv: string[]): { options: Partial<ChaosOptions>; json: boolean } {
  const options: { -readonly [K in keyof ChaosOptions]?: ChaosOptions[K] } = {};
  let json = false;
  const int = (flag: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${flag}: expected an integer >= ${min}, got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    switch (flag) {
      case '--runs':
        options.runs = int(flag, argv[++i], 1);
        break;
      case '--workers':
        options.workers = int(flag, argv[++i], 1);
        break;
      case '--kills':
        options.kills = int(flag, argv[++i], 0);
        break;
      case '--writes':
        options.writesPerRun = int(flag, argv[++i], 1);
        break;
      case '--json':
        json = true;
        break;
      case '-h':
      case '--help':
        process.stdout.write(
          `usage: tsx scripts/chaos.ts [--runs ${DEFAULT_CHAOS_OPTIONS.runs}] [--workers ${DEFAULT_CHAOS_OPTIONS.workers}] [--kills ${DEFAULT_CHAOS_OPTIONS.kills}] [--writes ${DEFAULT_CHAOS_OPTIONS.writesPerRun}] [--json]\n`,
        );
        process.exit(0);
        break;
      default:
        throw new Error(`unknown flag ${flag} (try --help)`);
    }
  }
  return { options, json };
}

async function run(): Promise<void> {
  const { options, json } = parseArgs(process.argv.slice(2));
  const report = await runChaos({ ...options, log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(json ? `${JSON.stringify(report)}\n` : formatReport(report));
  process.exit(report.ok ? 0 : 1);
}

run().catch((err: unknown) => {
  console.error(`chaos failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(2);
});
