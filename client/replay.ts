/**
 * `agentctl replay FILE...` / `npm run replay -- FILE...`: offline replay of docs/spec.md §6.
 * Every file is read and validated before anything is printed, so a malformed file in
 * a batch exits 2 with a message naming the file and field and prints nothing on stdout.
 */
import { readFileSync } from 'node:fs';
import {
  isGuardProfile,
  parseReplayFile,
  replay,
  ReplayFormatError,
  UnknownProfileError,
  type ReplayFile,
} from '../guard';

/** Exit codes of the replay command. */
export const ReplayExit = { OK: 0, MALFORMED: 2 } as const;

/** Reads and parses one replay file; throws a ReplayFormatError prefixed with the file. */
export function loadReplayFile(path: string): ReplayFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'read error';
    throw new ReplayFormatError(`${path}: cannot read file (${code})`, '(file)');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ReplayFormatError(`${path}: not valid JSON (${(err as Error).message})`, '(json)');
  }
  try {
    return parseReplayFile(json);
  } catch (err) {
    if (err instanceof ReplayFormatError) throw new ReplayFormatError(`${path}: ${err.message}`, err.field);
    throw err;
  }
}

/**
 * Runs the replay over files, writing one JSON line per file to `out`.
 * Returns the process exit code.
 */
export function runReplay(
  files: readonly string[],
  out: (line: string) => void = (l) => process.stdout.write(l + '\n'),
  err: (line: string) => void = (l) => process.stderr.write(l + '\n'),
  options: { pretty?: boolean; profile?: string } = {},
): number {
  if (files.length === 0) {
    err('replay: no FILE given (usage: agentctl replay [--profile NAME] FILE.json [FILE.json ...])');
    return ReplayExit.MALFORMED;
  }
  if (options.profile !== undefined && !isGuardProfile(options.profile)) {
    err(`replay: --profile: ${new UnknownProfileError(options.profile).message}`);
    return ReplayExit.MALFORMED;
  }
  const parsed: ReplayFile[] = [];
  let bad = 0;
  for (const file of files) {
    try {
      parsed.push(loadReplayFile(file));
    } catch (e) {
      if (!(e instanceof ReplayFormatError)) throw e;
      err(`replay: ${e.message}`);
      bad += 1;
    }
  }
  if (bad > 0) return ReplayExit.MALFORMED;
  for (const file of parsed) {
    const outcome = replay(file, options.profile === undefined ? {} : { profile: options.profile });
    out(options.pretty ? JSON.stringify(outcome, null, 2) : JSON.stringify(outcome));
  }
  return ReplayExit.OK;
}
