/**
 * The few lines of flag parsing the bench and scripts share (`--flag value` and `--flag=value`),
 * without a dependency: each caller keeps its own `switch` over the flags it knows.
 */

/** Each flag of `argv` with a reader of its value (the inline `=value`, else the next argument). */
export function* cliFlags(
  argv: readonly string[],
): Generator<{ flag: string; value: () => string | undefined }> {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const flag = eq >= 0 ? a.slice(0, eq) : a;
    const inline = eq >= 0 ? a.slice(eq + 1) : undefined;
    yield { flag, value: () => inline ?? argv[++i] };
  }
}

/** `v` as an integer of at least `min`; throws naming the flag otherwise. */
export function intFlag(flag: string, v: string | undefined, min: number): number {
  const n = Number(v);
  if (v === undefined || !Number.isInteger(n) || n < min)
    throw new Error(`${flag}: expected an integer >= ${min}, got ${v}`);
  return n;
}
