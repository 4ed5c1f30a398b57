/**
 * How bench/traces/agentdojo/ was made, kept so anyone can check or redo it.
 *
 *   tsx scripts/traces/extract-agentdojo.ts --git /path/to/agentdojo/.git [--out DIR]
 *
 * Reads, from a clone of github.com/ethz-spylab/agentdojo (MIT), the `runs/` tree as it was at
 * commit {@link COMMIT} (the last commit that changed it; later commits deleted the directory),
 * and writes one gzip'd JSON Lines file per pipeline: `<pipeline>.jsonl.gz`, one line
 * `{"path": …, "run": …}` per benign run (`runs/<pipeline>/<suite>/<user_task>/none/none.json`:
 * no injection, no attack), the run object unchanged, lines sorted by path.
 *
 * Which runs (a rule, not chosen by outcome): every benign run of every pipeline that is a plain
 * model, that is whose name does not end in one of AgentDojo's prompt-injection defences
 * ({@link DEFENCES}). Nothing else is filtered: failed runs, runs that ended in an API error and
 * long runs are all kept.
 *
 * Deterministic: the same commit gives the same bytes (gzip without a file name or time).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { cliFlags } from '../cli-args';

/** The last commit of ethz-spylab/agentdojo that changed `runs/` (its tree: 472cbb2e5f7b…). */
export const COMMIT = '9272bf1e0c1c441600264324f481b97fb54db60b';
/** AgentDojo's defence suffixes: a pipeline `<model>-<defence>` is not a plain model. */
export const DEFENCES = [
  'repeat_user_prompt',
  'spotlighting_with_delimiting',
  'tool_filter',
  'transformers_pi_detector',
] as const;

const BENIGN = /^runs\/([^/]+)\/([^/]+)\/([^/]+)\/none\/none\.json$/;

function main(argv: readonly string[]): void {
  let gitDir: string | undefined;
  let out = join(__dirname, '..', '..', 'bench', 'traces', 'agentdojo');
  let commit = COMMIT;
  for (const { flag, value } of cliFlags(argv)) {
    if (flag === '--git') gitDir = value();
    else if (flag === '--out') out = value() ?? out;
    else if (flag === '--commit') commit = value() ?? commit;
    else throw new Error(`unknown flag ${flag}`);
  }
  if (!gitDir) throw new Error('--git DIR (a clone of ethz-spylab/agentdojo) is required');
  const git = (args: string[], input?: string): Buffer =>
    execFileSync('git', ['--git-dir', gitDir!, ...args], {
      input,
      maxBuffer: 1 << 30,
    });
  const paths = git(['ls-tree', '-r', '--name-only', commit, 'runs/'])
    .toString('utf8')
    .split('\n')
    .filter((p) => {
      const m = BENIGN.exec(p);
      return m !== null && !DEFENCES.some((d) => m[1]!.endsWith(`-${d}`));
    })
    .sort();
  const blobs = git(['cat-file', '--batch'], paths.map((p) => `${commit}:${p}`).join('\n') + '\n');
  const byPipeline = new Map<string, string[]>();
  let at = 0;
  for (const path of paths) {
    const nl = blobs.indexOf(10, at);
    const size = Number(blobs.subarray(at, nl).toString('utf8').split(' ')[2]);
    const text = blobs.subarray(nl + 1, nl + 1 + size).toString('utf8');
    at = nl + 1 + size + 1;
    const pipeline = BENIGN.exec(path)![1]!;
    const lines = byPipeline.get(pipeline) ?? [];
    lines.push(JSON.stringify({ path, run: JSON.parse(text) as unknown }));
    byPipeline.set(pipeline, lines);
  }
  mkdirSync(out, { recursive: true });
  for (const [pipeline, lines] of [...byPipeline].sort(([a], [b]) => a.localeCompare(b))) {
    writeFileSync(join(out, `${pipeline}.jsonl.gz`), gzipSync(lines.join('\n') + '\n', { level: 9 }));
    process.stdout.write(`${pipeline}: ${lines.length} runs\n`);
  }
}

if (require.main === module) main(process.argv.slice(2));
