/**
 * `npm run bench:replay`: the offline replay's cost per call at two script lengths.
 * A script of n distinct plain calls (nothing stops it) is parsed and replayed in-process; the
 * time per call at 20,000 and 200,000 calls is printed with their ratio, and the entries of the
 * script read per call (counted through a Proxy, as test/guard/script-cost.test.ts does). Before
 * the script cursor, reading the call at an index walked the script from its first entry: 8x per
 * call from 20,000 to 200,000 calls. Target: within 2x. `--json` prints one JSON object.
 */
import { parseReplayFile, replay, type ReplayEntry } from '../guard';

const SIZES = [20_000, 200_000] as const;

function measure(n: number): { n: number; usPerCall: number; readsPerCall: number } {
  const calls: ReplayEntry[] = Array.from({ length: n }, (_, i) => ({
    tool: 'read',
    args: { id: `r-${i}` },
  }));
  const file = parseReplayFile({ config: { maxSteps: 1e9, noProgressLimit: 1e9 }, calls });
  let reads = 0;
  const counted = new Proxy(file.calls, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads += 1;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  // Timed on the plain array; the entry reads counted on a second replay through the Proxy.
  const t0 = process.hrtime.bigint();
  const out = replay(file);
  const ns = Number(process.hrtime.bigint() - t0);
  if (out.executed !== n) throw new Error(`replayed ${out.executed} of ${n} calls`);
  replay({ ...file, calls: counted });
  return { n, usPerCall: ns / 1e3 / n, readsPerCall: reads / n };
}

const rows = SIZES.map(measure);
const ratio = rows[1]!.usPerCall / rows[0]!.usPerCall;
if (process.argv.includes('--json')) {
  console.log(JSON.stringify({ rows, ratio }));
} else {
  for (const r of rows)
    console.log(
      `${String(r.n).padStart(8)} calls: ${r.usPerCall.toFixed(2)} µs/call, ${r.readsPerCall.toFixed(2)} entry reads/call`,
    );
  console.log(`per-call ratio ${SIZES[1]}/${SIZES[0]}: ${ratio.toFixed(2)}x (target: within 2x)`);
}
