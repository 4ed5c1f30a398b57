/**
 * The oldest Node this package runs on (package.json `engines.node`): 22.13, the first Node
 * 22 whose built-in `node:sqlite` loads without a flag (the embedded ledger's driver,
 * storage/sqlite-driver.ts). Below it the entry points (agentctl, the worker binary, the demo)
 * and the SQLite ledger say so plainly, with the one command that runs the same thing on a
 * Node 22 from the npm registry (`npx -p node@22 -- <the command>`), instead of failing
 * somewhere inside. Not for workflow code (it reads `process`).
 */

/** The major version of the oldest supported Node. */
export const NODE_FLOOR_MAJOR = 22;
/** Its minor version. */
export const NODE_FLOOR_MINOR = 13;
/** The floor as people write it: `22.13`. */
export const NODE_FLOOR = `${NODE_FLOOR_MAJOR}.${NODE_FLOOR_MINOR}`;

/**
 * The message for a Node below the floor, or undefined when `version` is new enough.
 * @param version the running Node's version (`process.versions.node`)
 * @param command the command the user ran, for the remedy (default: read from this process)
 */
export function nodeFloorProblem(
  version: string = process.versions.node,
  command: string = currentCommand(),
): string | undefined {
  const [major, minor] = version
    .replace(/^v/, '')
    .split('.')
    .map((n) => Number.parseInt(n, 10));
  if (major === undefined || !Number.isFinite(major)) return undefined;
  if (major > NODE_FLOOR_MAJOR || (major === NODE_FLOOR_MAJOR && (minor ?? 0) >= NODE_FLOOR_MINOR))
    return undefined;
  return (
    `agent-loop-guard needs Node ${NODE_FLOOR} or newer (this is v${version.replace(/^v/, '')}). ` +
    `Run it on Node ${NODE_FLOOR_MAJOR} from npm: npx -p node@${NODE_FLOOR_MAJOR} -- ${command}`
  );
}

/** Throws the {@link nodeFloorProblem} message when this Node is below the floor. */
export function assertNodeFloor(): void {
  const problem = nodeFloorProblem();
  if (problem !== undefined) throw new Error(problem);
}

/**
 * The command line the user typed to start this process, as far as it can be told: an npm
 * script (`npm run demo -- --once`), a package binary given as `bin` (`agentctl status r-1`),
 * a plain `node file.js …`; otherwise the placeholder `<your command>`.
 */
export function currentCommand(
  bin?: string,
  argv: readonly string[] = process.argv,
  env: NodeJS.ProcessEnv = process.env,
): string {
  let args = argv.slice(2);
  const event = env.npm_lifecycle_event;
  if (event && event !== 'npx' && env.npm_command !== 'exec') {
    // The script's own arguments come first in argv: keep only those the user added after `--`.
    const tokens = (env.npm_lifecycle_script ?? '').trim().split(/\s+/);
    const own = tokens.slice(tokens.findIndex((t) => argv[1] !== undefined && argv[1].endsWith(t)) + 1);
    if (own.length > 0 && own.every((t, i) => args[i] === t)) args = args.slice(own.length);
    const npm = ['test', 'start', 'stop', 'restart'].includes(event) ? `npm ${event}` : `npm run ${event}`;
    return args.length > 0 ? `${npm} -- ${shellWords(args)}` : npm;
  }
  if (bin) return [bin, ...(args.length > 0 ? [shellWords(args)] : [])].join(' ');
  const script = argv[1];
  if (script !== undefined && /\.[cm]?js$/.test(script)) {
    const rel = script.startsWith(`${process.cwd()}/`) ? script.slice(process.cwd().length + 1) : script;
    return ['node', shellWords([rel, ...args])].join(' ');
  }
  return '<your command>';
}

/** `words` as one shell line, quoting the words that need it. */
function shellWords(words: readonly string[]): string {
  return words.map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(' ');
}
