/**
 * `npm run bench:floor -- --in-place`: where a step's main-thread CPU goes, measured
 * in the running workers rather than beside them. Node's `process.threadCpuUsage()` (the calling
 * thread's CPU, so the workflow and core threads do not count; the project's pinned Node 22 and
 * 24 have it, an older Node is refused) is read around:
 *  - each activity's own function (an activity inbound interceptor around `execute`);
 *  - the SDK's activity task around it (`Activity.run`: the input decoded, the context, the
 *    result encoded);
 *  - the SDK's workflow activation (`Worker.handleActivation`), and inside it the activation's
 *    trip to the workflow thread (`activate`) and the sink-call round trip after it
 *    (`getAndResetSinkCalls`), each with its awaits (nothing else runs on the main thread of
 *    the bench's one run at a time meanwhile, but a wrapper's own cost is in it);
 *  - the payload codec's `encode` and `decode`.
 * The SDK's functions are wrapped on their prototypes (internals of `@temporalio/worker` 1.24,
 * only in this bench's process); a figure is µs per step of the measured rounds, by mode.
 */
import type { ActivityInboundCallsInterceptor, ActivityExecuteInput, Next } from '@temporalio/worker';
import type { PayloadCodec } from '@temporalio/common';

type ThreadCpu = () => { user: number; system: number };

/** A measured span's total in one mode: calls and µs of main-thread CPU. */
interface Span {
  calls: number;
  us: number;
}

/** What `--in-place` adds to the bench. */
export interface InPlace {
  /** The activity interceptor both workers get. */
  readonly activityInterceptor: () => { inbound: ActivityInboundCallsInterceptor };
  /** Wraps the codec's encode and decode. */
  wrapCodec(codec: PayloadCodec): void;
  /** Attributes what runs from now on to `mode` (null: to nothing, e.g. the warm-up). */
  setMode(mode: string | null): void;
  /** Counts `steps` measured steps of `mode`. */
  addSteps(mode: string, steps: number): void;
  /** The table: a row per span, a column per mode, µs per step (and calls per step). */
  table(modes: readonly string[]): string;
}

/** Installs the wrappers (once per process). Throws on a Node without `process.threadCpuUsage`. */
export function installInPlace(): InPlace {
  const read = (process as unknown as { threadCpuUsage?: ThreadCpu }).threadCpuUsage;
  if (typeof read !== 'function') {
    throw new Error(
      `--in-place needs process.threadCpuUsage, which Node ${process.version} lacks: run the bench with the project's Node (bash .ci/node.sh home 22)`,
    );
  }
  const now = (): number => {
    const u = read.call(process);
    return u.user + u.system;
  };
  let mode: string | null = null;
  const spans = new Map<string, Map<string, Span>>();
  const steps = new Map<string, number>();
  const labels: string[] = [];
  const add = (label: string, m: string | null, us: number): void => {
    if (m === null) return;
    let byLabel = spans.get(m);
    if (!byLabel) spans.set(m, (byLabel = new Map()));
    const s = byLabel.get(label) ?? { calls: 0, us: 0 };
    s.calls += 1;
    s.us += us;
    byLabel.set(label, s);
  };
  /** `target[name]`, timed under `label` (a promise until it settles). */
  const wrap = (target: Record<string, unknown>, name: string, label: string): void => {
    const orig = target[name];
    if (typeof orig !== 'function') throw new Error(`--in-place: ${label}: no function ${name} to wrap`);
    if (!labels.includes(label)) labels.push(label);
    target[name] = function (this: unknown, ...args: unknown[]): unknown {
      const m = mode;
      const t0 = now();
      const done = (): void => add(label, m, now() - t0);
      let out: unknown;
      try {
        out = (orig as (...a: unknown[]) => unknown).apply(this, args);
      } catch (err) {
        done();
        throw err;
      }
      if (out instanceof Promise) return out.finally(done);
      done();
      return out;
    };
  };
  /* eslint-disable @typescript-eslint/no-require-imports -- the SDK's internals, by path */
  const workerProto = require('@temporalio/worker/lib/worker.js').Worker.prototype;
  const activityProto = require('@temporalio/worker/lib/activity.js').Activity.prototype;
  const threadProto = require('@temporalio/worker/lib/workflow/threaded-vm.js').VMWorkflowThreadProxy
    .prototype;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const ownLabel = 'activity function (interceptor)';
  labels.push(ownLabel);
  wrap(activityProto, 'run', 'activity task (Activity.run)');
  wrap(workerProto, 'handleActivation', 'workflow activation (handleActivation)');
  wrap(threadProto, 'activate', '… its trip to the workflow thread (activate)');
  wrap(threadProto, 'getAndResetSinkCalls', '… its sink-call round trip (getAndResetSinkCalls)');
  return {
    activityInterceptor: () => ({
      inbound: {
        async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
          const m = mode;
          const t0 = now();
          try {
            return await next(input);
          } finally {
            add(ownLabel, m, now() - t0);
          }
        },
      },
    }),
    wrapCodec(codec) {
      wrap(codec as unknown as Record<string, unknown>, 'encode', 'codec encode');
      wrap(codec as unknown as Record<string, unknown>, 'decode', 'codec decode');
    },
    setMode(m) {
      mode = m;
    },
    addSteps(m, n) {
      steps.set(m, (steps.get(m) ?? 0) + n);
    },
    table(modes) {
      const cols = modes.filter((m) => (steps.get(m) ?? 0) > 0);
      const head = `| main-thread CPU, µs per step (calls per step) | ${cols.join(' | ')} |`;
      const rule = `| --- | ${cols.map(() => '---:').join(' | ')} |`;
      const rows = labels.map((label) => {
        const cells = cols.map((m) => {
          const s = spans.get(m)?.get(label);
          const n = steps.get(m)!;
          return s ? `${(s.us / n).toFixed(0)} (${(s.calls / n).toFixed(1)})` : '–';
        });
        return `| ${label} | ${cells.join(' | ')} |`;
      });
      return [head, rule, ...rows].join('\n');
    },
  };
}
