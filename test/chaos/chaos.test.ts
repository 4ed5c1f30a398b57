/**
 * A small `npm run chaos` (docs/chaos.md): 30 live runs of 4 writes on 2 worker processes sharing
 * a PostgreSQL ledger, two worker SIGKILLs, one dev-server SIGKILL + restart and one
 * PostgreSQL crash-restart while the runs are in flight. Everything is private to this test
 * (its own dev server with a db file, its own PostgreSQL instance on a free port), so the
 * restarts disturb no other test file. Passes only when every invariant holds: no duplicate
 * side effect (rows per operation key), no run lost or FAILED, every UNKNOWN record traced
 * to a killed executor or the PostgreSQL crash, and the chaos really hit runs in flight.
 */
import { formatReport } from '../../scripts/chaos/invariants';
import { findPostgresBin } from '../../scripts/chaos/postgres';
import { runChaos } from '../../scripts/chaos/run-chaos';

const pgBin = findPostgresBin();
const maybe = pgBin ? it : it.skip;

describe('chaos (small)', () => {
  maybe(
    'workers killed, dev server and PostgreSQL restarted mid-run: every invariant holds',
    async () => {
      const report = await runChaos({
        runs: 30,
        writesPerRun: 4,
        workers: 2,
        kills: 2,
        killEveryMs: [800, 1500],
        // Early, so runs are still in flight even on an idle machine (30 runs × 5 calls last
        // well beyond 3 s): the report fails a restart or kill that hit no open run.
        serverRestartAtMs: 1_500,
        pgRestartAtMs: 3_000,
        deadlineMs: 150_000,
      });
      if (!report.ok) throw new Error(formatReport(report));
      expect(report.figures.duplicates).toBe(0);
      expect(report.figures['worker SIGKILLs']).toBe(2);
      expect(report.invariants.every((i) => i.ok)).toBe(true);
    },
    180_000,
  );
});
