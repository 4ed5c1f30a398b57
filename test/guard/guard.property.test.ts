/**
 * Property tests (fast-check) for the guard's guarantees, over generated traces:
 * budgets always hold, a run without progress is short, a JSON checkpoint taken at any
 * point changes no decision, and fingerprints ignore exactly the non-semantic
 * differences.
 */
import fc from 'fast-check';
import {
  canonicalize,
  LoopGuard,
  normalizeCall,
  type GuardCall,
  type GuardConfigInput,
  type Json,
  type ToolResult,
} from '../../guard';

const RUNS = { numRuns: 300 };

/** A small pool of proposals: repeats, A-B cycles and shared operation keys all occur. */
const POOL: GuardCall[] = Array.from({ length: 6 }, (_, i) => {
  const write = i >= 3;
  return {
    tool: write ? 'send' : 'search',
    fingerprint: normalizeCall(write ? 'send' : 'search', { q: `q${i}` }).fingerprint,
    // Two writes share key k0, so a conflict is possible.
    operationKey: write ? `k${i === 5 ? 0 : i - 3}` : null,
  };
});

interface Op {
  call: number;
  kind: ToolResult['kind'];
  retryAfterMs: number | null;
  terminal: boolean;
  progress: boolean;
  dt: number;
  tokens: number;
  costUsd: number;
}

const opArb = (o: { progress?: boolean; waits?: boolean } = {}): fc.Arbitrary<Op> =>
  fc.record({
    // Mostly the first three calls, so repeats and A-B cycles are common.
    call: fc.oneof(
      { arbitrary: fc.nat({ max: 2 }), weight: 3 },
      { arbitrary: fc.nat({ max: POOL.length - 1 }), weight: 1 },
    ),
    kind: fc.oneof(
      { arbitrary: fc.constant('SUCCESS' as const), weight: 12 },
      { arbitrary: fc.constant('RETRYABLE' as const), weight: 4 },
      { arbitrary: fc.constant('PENDING' as const), weight: 6 },
      { arbitrary: fc.constant('PRECONDITION' as const), weight: 2 },
      { arbitrary: fc.constant('FATAL' as const), weight: 1 },
    ),
    retryAfterMs:
      o.waits === false ? fc.constant(null) : fc.option(fc.constantFrom(0, 50, 100, 200), { nil: null }),
    terminal: fc.constant(false), // a terminal result is placed by traceArb
    progress: o.progress === false ? fc.constant(false) : fc.boolean(),
    dt: fc.constantFrom(0, 10, 50, 100, 250),
    tokens: fc.nat({ max: 40 }),
    costUsd: fc.constantFrom(0, 0.01, 0.05),
  });

const configArb: fc.Arbitrary<GuardConfigInput> = fc.record({
  maxSteps: fc.integer({ min: 1, max: 15 }),
  maxMs: fc.integer({ min: 50, max: 20_000 }),
  sameCallLimit: fc.integer({ min: 1, max: 4 }),
  noProgressLimit: fc.integer({ min: 1, max: 6 }),
  maxWaitPolls: fc.integer({ min: 1, max: 4 }),
  maxTokens: fc.option(fc.integer({ min: 1, max: 2000 }), { nil: null }),
  maxCostUsd: fc.option(fc.constantFrom(0.05, 0.2, 5), { nil: null }),
});

function resultOf(op: Op): ToolResult {
  switch (op.kind) {
    case 'SUCCESS':
      return { kind: 'SUCCESS', terminal: op.terminal };
    case 'RETRYABLE':
    case 'PENDING':
      return op.retryAfterMs === null
        ? { kind: op.kind, code: 'c' }
        : { kind: op.kind, code: 'c', retryAfterMs: op.retryAfterMs };
    case 'PRECONDITION':
      return { kind: 'PRECONDITION', code: 'c', unmet: 'u' };
    default:
      return { kind: 'FATAL', code: 'boom' };
  }
}

interface Event {
  index: number;
  fingerprint: string;
  before: string;
  honoured: boolean;
  after: string | null;
  progressed: boolean;
  atMs: number;
  tokens: number;
  costUsd: number;
}

/**
 * Drives a guard like the replay does. `restore(point)` is asked before every before()
 * and every after(); when it says yes the guard is replaced by its JSON round trip.
 */
function drive(
  config: GuardConfigInput,
  ops: readonly Op[],
  restore: (point: number) => boolean = () => false,
) {
  let g = new LoopGuard(config);
  const events: Event[] = [];
  let atMs = 0;
  let pv = 0;
  let tokens = 0;
  let costUsd = 0;
  let point = 0;
  const maybeRestore = () => {
    if (restore(point++)) g = LoopGuard.fromJSON(JSON.parse(JSON.stringify(g.toJSON())));
  };
  for (let index = 0; index < ops.length; index++) {
    const op = ops[index]!;
    atMs += op.dt;
    tokens += op.tokens;
    costUsd += op.costUsd;
    const call = { ...POOL[op.call]!, usage: { tokens: op.tokens, costUsd: op.costUsd } };
    maybeRestore();
    const before = g.before(call, atMs);
    const ev: Event = {
      index,
      fingerprint: call.fingerprint,
      before: before.decision === 'stop' ? `stop:${before.reason}` : before.decision,
      honoured:
        (before.decision === 'execute' || before.decision === 'return_cached_success') && before.honouredPoll,
      after: null,
      progressed: false,
      atMs,
      tokens,
      costUsd,
    };
    events.push(ev);
    if (before.decision === 'stop') break;
    const executed = before.decision === 'execute';
    if (executed && op.progress) pv += 1;
    const prior = g.progressVersion;
    maybeRestore();
    const after = g.after(call, executed ? resultOf(op) : { kind: 'SUCCESS' }, pv, atMs);
    ev.progressed = g.progressVersion > prior;
    ev.after = after.decision === 'stop' ? `stop:${after.reason}` : after.decision;
    if (after.decision === 'stop' || after.decision === 'complete') break;
  }
  return { events, guard: g };
}

/** Marks a few results terminal so complete runs occur too. */
const traceArb = (o: { progress?: boolean; waits?: boolean } = {}, max = 40) =>
  fc
    .tuple(fc.array(opArb(o), { minLength: 1, maxLength: max }), fc.nat({ max: 200 }))
    .map(([ops, t]) =>
      ops.map((op, i) => (i === t && op.kind === 'SUCCESS' ? { ...op, terminal: true } : op)),
    );

/** Two calls, rare progress, polls spaced at the server's wait: cycles and wait budgets. */
const loopyArb = fc.array(
  fc.record({
    call: fc.nat({ max: 1 }),
    kind: fc.constantFrom<ToolResult['kind']>('SUCCESS', 'PENDING', 'PENDING', 'RETRYABLE'),
    retryAfterMs: fc.constant(100),
    terminal: fc.constant(false),
    progress: fc.nat({ max: 5 }).map((n) => n === 0),
    dt: fc.constantFrom(50, 100),
    tokens: fc.constant(1),
    costUsd: fc.constant(0),
  }),
  { minLength: 1, maxLength: 40 },
);
const loopyConfigArb: fc.Arbitrary<GuardConfigInput> = fc.record({
  sameCallLimit: fc.integer({ min: 2, max: 4 }),
  noProgressLimit: fc.integer({ min: 3, max: 8 }),
  maxWaitPolls: fc.integer({ min: 1, max: 3 }),
});

describe('guard properties', () => {
  it('ends every generated trace within its budgets', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.tuple(configArb, traceArb()), fc.tuple(loopyConfigArb, loopyArb)),
        ([config, ops]) => {
          const { events, guard } = drive(config, ops);
          const cfg = guard.config;
          const executed = events.filter((e) => e.before === 'execute');
          expect(executed.length).toBeLessThanOrEqual(cfg.maxSteps);
          expect(guard.stepCount).toBe(executed.length);
          for (const e of events.filter(
            (x) => x.before === 'execute' || x.before === 'return_cached_success',
          )) {
            expect(e.atMs).toBeLessThan(cfg.maxMs);
            expect(e.tokens).toBeLessThanOrEqual(cfg.maxTokens);
            expect(e.costUsd).toBeLessThanOrEqual(cfg.maxCostUsd);
          }
          // Within one window no fingerprint runs more than sameCallLimit + maxWaitPolls times,
          // and consecutive no-progress decisions never exceed noProgressLimit.
          let perWindow = new Map<string, number>();
          let noProgress = 0;
          for (const e of events) {
            if (e.after === null) continue;
            if (e.progressed) {
              perWindow = new Map();
              noProgress = 0;
            } else if (!(e.honoured && e.before === 'execute')) {
              noProgress += 1;
            }
            expect(noProgress).toBeLessThanOrEqual(cfg.noProgressLimit);
            perWindow.set(e.fingerprint, (perWindow.get(e.fingerprint) ?? 0) + 1);
            expect(perWindow.get(e.fingerprint)).toBeLessThanOrEqual(cfg.sameCallLimit + cfg.maxWaitPolls);
          }
        },
      ),
      RUNS,
    );
  });

  it('runs at most noProgressLimit calls when nothing progresses and no re-poll is honoured', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 8 }),
        traceArb({ progress: false, waits: false }, 60),
        (noProgressLimit, sameCallLimit, ops) => {
          const { events } = drive({ noProgressLimit, sameCallLimit, maxSteps: 1000, maxMs: 1e9 }, ops);
          const ran = events.filter((e) => e.before === 'execute' || e.before === 'return_cached_success');
          expect(ran.length).toBeLessThanOrEqual(noProgressLimit);
          expect(events.some((e) => e.honoured)).toBe(false);
        },
      ),
      RUNS,
    );
  });

  it('makes the same decisions when the state is checkpointed and restored at any point', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.tuple(configArb, traceArb()), fc.tuple(loopyConfigArb, loopyArb)),
        fc.nat({ max: 80 }),
        ([config, ops], at) => {
          const original = drive(config, ops);
          const once = drive(config, ops, (p) => p === at);
          const always = drive(config, ops, () => true);
          expect(once.events).toEqual(original.events);
          expect(always.events).toEqual(original.events);
          expect(once.guard.toJSON()).toEqual(original.guard.toJSON());
        },
      ),
      { numRuns: 300 },
    );
  });
});

// ---------------------------------------------------------------------------------
// Fingerprints

const KEYS = ['a', 'b', 'q', 'page', 'cursor', 'items', 'limit'];
const leaf = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }),
  fc.string({ maxLength: 8 }),
  fc.boolean(),
  fc.constant(null),
);
const { value: argValue } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 4 }),
  ),
}));
const argsArb = fc.dictionary(fc.constantFrom(...KEYS), argValue, { maxKeys: 5 }) as fc.Arbitrary<
  Record<string, unknown>
>;

const SPEC = { defaults: { limit: 10 }, nonSemantic: ['requestId', 'meta.traceId'] };

/** A deterministic shuffle of every object's keys, and white space around every string. */
function jitter(value: unknown, seed: number): unknown {
  if (typeof value === 'string') return `${' '.repeat(seed % 3)}${value}${seed % 2 ? '\n' : '\t '}`;
  if (Array.isArray(value)) return value.map((v, i) => jitter(v, seed + i));
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    let s = seed;
    for (let i = entries.length - 1; i > 0; i--) {
      s = (s * 1103515245 + 12345) & 0x7fffffff;
      const j = s % (i + 1);
      [entries[i], entries[j]] = [entries[j]!, entries[i]!];
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, jitter(v, s + k.length)]));
  }
  return value;
}

/** Every path to a leaf (or an empty container) of a canonical value. */
function leafPaths(value: Json, path: Array<string | number> = []): Array<Array<string | number>> {
  if (Array.isArray(value)) {
    return value.length === 0 ? [path] : value.flatMap((v, i) => leafPaths(v, [...path, i]));
  }
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    return keys.length === 0 ? [path] : keys.flatMap((k) => leafPaths(value[k]!, [...path, k]));
  }
  return [path];
}

/** A copy of `value` whose leaf at `path` has a different canonical value. */
function mutateAt(value: unknown, path: ReadonlyArray<string | number>): unknown {
  if (path.length === 0) {
    if (typeof value === 'number') return value + 1;
    if (typeof value === 'string') return `${value.trim()}x`;
    if (typeof value === 'boolean') return !value;
    if (value === null) return 0;
    if (Array.isArray(value)) return [0];
    return { a: 0 };
  }
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((v, i) => (i === head ? mutateAt(v, rest) : v));
  const obj = value as Record<string, unknown>;
  return { ...obj, [head as string]: mutateAt(obj[head as string], rest) };
}

describe('fingerprint properties', () => {
  it('ignores key order, white space, defaulted fields and request/trace ids', () => {
    fc.assert(
      fc.property(argsArb, fc.nat(), fc.string(), fc.string(), (args, seed, requestId, traceId) => {
        const base = normalizeCall('search', args, SPEC).fingerprint;
        const noisy: Record<string, unknown> = {
          ...(jitter(args, seed) as Record<string, unknown>),
          requestId,
        };
        if (!('limit' in args)) noisy.limit = 10; // the default spelled out
        expect(normalizeCall('search', noisy, SPEC).fingerprint).toBe(base);
        // A trace id inside a meta object that is itself present in both.
        const withMeta = { ...args, meta: { traceId: 'a', keep: 1 } };
        expect(normalizeCall('search', { ...withMeta, meta: { keep: 1, traceId } }, SPEC).fingerprint).toBe(
          normalizeCall('search', withMeta, SPEC).fingerprint,
        );
      }),
      RUNS,
    );
  });

  it('changes with any semantic field, and with the tool name', () => {
    fc.assert(
      fc.property(argsArb, fc.nat(), (args, pick) => {
        const norm = normalizeCall('search', args, SPEC);
        const paths = leafPaths(norm.canonicalArgs);
        const path = paths[pick % paths.length]!;
        const changed = mutateAt(canonicalize({ limit: 10, ...args }), path);
        expect(normalizeCall('search', changed, SPEC).fingerprint).not.toBe(norm.fingerprint);
        expect(normalizeCall('search2', args, SPEC).fingerprint).not.toBe(norm.fingerprint);
      }),
      RUNS,
    );
  });
});
