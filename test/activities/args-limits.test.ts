/**
 * Deep or huge proposed args are refused as PRECONDITION `invalid_args` by the plan
 * activity's normalisation (ToolRegistry.normalize) before zod, the canonical form, the
 * fingerprint or the SHA-256 args hash recurse into them (issue #10).
 */
import { z } from 'zod';
import { argsOutOfBounds, MAX_ARGS_BYTES, MAX_ARGS_DEPTH } from '../../tools/args-limits';
import { defineTool } from '../../tools/define-tool';
import { ToolRegistry } from '../../tools/registry';

let parses = 0;
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a value up.',
  effect: 'read',
  schema: z.object({ q: z.unknown() }).refine(() => ++parses > 0),
  async execute() {
    return { data: null };
  },
});
const registry = new ToolRegistry([lookup]);

function nested(levels: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < levels; i++) v = { q: v };
  return v;
}

describe('args bounds in the plan activity', () => {
  beforeEach(() => {
    parses = 0;
  });

  it('refuses args nested 100 000 levels deep without recursing (no stack overflow), and never parses them', () => {
    const n = registry.normalize('lookup', nested(100_000));
    expect(n.rejection).toEqual({
      kind: 'PRECONDITION',
      code: 'invalid_args',
      unmet: `args too deep: nested more than ${MAX_ARGS_DEPTH} levels; propose the call with smaller args`,
    });
    expect(parses).toBe(0);
    expect(n.canonicalArgs).toEqual({
      args_refused: `args too deep: nested more than ${MAX_ARGS_DEPTH} levels`,
    });
  });

  it('refuses args over 256 KB of JSON; two different huge args are one placeholder call to the guard', () => {
    const a = registry.normalize('lookup', { q: 'a'.repeat(MAX_ARGS_BYTES) });
    const b = registry.normalize('lookup', { q: Array.from({ length: 300_000 }, (_, i) => i) });
    expect(a.rejection).toMatchObject({ kind: 'PRECONDITION', code: 'invalid_args' });
    expect(a.rejection?.kind === 'PRECONDITION' && a.rejection.unmet).toMatch(/^args too large/);
    // Fingerprinted by the placeholder, not by their content: a repeat is still caught as one.
    expect(b.fingerprint).toBe(a.fingerprint);
    expect(b.argsHash).toBe(a.argsHash);
    expect(parses).toBe(0);
  });

  it('lets args at the bounds through to the schema as before', () => {
    const n = registry.normalize('lookup', nested(MAX_ARGS_DEPTH - 1));
    expect(n.rejection).toBeNull();
    expect(parses).toBe(1);
    expect(registry.normalize('lookup', { q: 'x'.repeat(MAX_ARGS_BYTES - 100) }).rejection).toBeNull();
  });

  it('stops early on a cyclic value instead of walking it forever', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(argsOutOfBounds(cyclic)).toMatch(/too deep/);
    const wide: unknown[] = [];
    wide.push(wide, wide);
    expect(argsOutOfBounds(wide, { maxDepth: Number.POSITIVE_INFINITY })).toMatch(/too large/);
  });
});
