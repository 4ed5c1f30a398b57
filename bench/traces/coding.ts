/**
 * Recorded runs of real CODING agents (SWE-bench-style tasks, one shell tool or SWE-agent's
 * file-editor commands, each run labelled resolved or not by its benchmark) into replay files
 * (docs/spec.md §6), for `npm run bench:traces -- --coding DIR` (docs/real-agents.md "Coding
 * agents"). The data stays out of the repository: DIR is a directory the user downloads
 * (bench/traces/coding/SOURCE.md says from where). Pure and deterministic.
 *
 * Two record formats are read, found anywhere under DIR:
 * - mini-swe-agent `*.traj.json` (`messages`: each assistant message holds one ```bash block,
 *   answered by a user message `<returncode>N</returncode><output>…`; the run ends with the
 *   command `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT …`), labelled by a `results_summary.json`
 *   (`instances[].resolved`) or a SWE-bench `results.json` (`resolved` ids) in an enclosing
 *   directory;
 * - SWE-agent `*.traj` (`trajectory[]`: `action`, `observation`; `submit` ends it), labelled the
 *   same way (`results/results.json`).
 * A data set is the directory that holds the `trajs/` directory (one system, one model).
 *
 * Each action is a call of one tool, `shell` (args `{command}`: a SWE-agent editor command is a
 * command too), in the recorded order; the final submission is `complete_task` (terminal
 * SUCCESS). Three VARIANTS of the same record:
 * - `naive`: a shell tool that throws on a non-zero exit (the recorded return code; SWE-agent
 *   records none, so its runs have no such errors) — FATAL `tool_error`, which the `llm` profile
 *   hands to the model as PRECONDITION `tool_error`; no workspace reports.
 * - `exit-as-result`: a non-zero exit is a SUCCESS the model reads (the exit code is in the
 *   output); no workspace reports. The runtime before workspace reports.
 * - `workspace`: as `exit-as-result`, and each call carries the workspace report the shell tool
 *   of tools/shell.ts would have given ({@link WorkspaceSim}: reconstructed from the command
 *   text, since the records hold no file contents).
 * Progress (`progressVersion`) is the durable run's observed progress: +1 for a SUCCESS whose
 * output the run has not seen before. Time (`atMs`) is the model's own response times when
 * recorded (mini-swe-agent's `created`), else 0; usage (tokens, cost) per call when recorded.
 *
 * Labels from the record alone (never from a replay), see {@link labelCodingLoops}.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createHash } from 'node:crypto';

/** A workspace report as a replay file's result carries it. */
export interface WorkspaceJson {
  before: string;
  after: string;
  size: number;
}

/** One call of a coding replay file. */
export interface CodingCall {
  tool: 'shell' | 'complete_task';
  args: { command: string } | Record<string, never>;
  atMs: number;
  result:
    | { kind: 'SUCCESS'; terminal?: true; workspace?: WorkspaceJson }
    | { kind: 'FATAL'; code: 'tool_error'; message: string };
  progressVersion: number;
  usage?: { tokens: number; costUsd: number };
}

/** A coding replay file. */
export interface CodingReplayFile {
  name: string;
  profile: string;
  config?: Record<string, number>;
  calls: CodingCall[];
}

/** The variants of one record (see the module comment). */
export const CODING_VARIANTS = ['naive', 'exit-as-result', 'workspace'] as const;
/** One of {@link CODING_VARIANTS}. */
export type CodingVariant = (typeof CODING_VARIANTS)[number];

/** One action of a record, format-free. */
export interface CodingStep {
  command: string;
  output: string;
  /** The recorded exit code (null: not recorded). */
  exitCode: number | null;
  /** The model's response time, ms from the run's first response (null: not recorded). */
  atMs: number | null;
  tokens: number;
  costUsd: number;
  /** The action ended the run (the submission). */
  submit: boolean;
}

/** One record, format-free. */
export interface CodingRecord {
  name: string;
  dataset: string;
  resolved: boolean;
  steps: CodingStep[];
}

/** A labelled loop: its class and the indexes (into the file's calls) of its repeats. */
export interface CodingLoop {
  kind: 'failing' | 'repeat' | 'reapplied';
  indexes: number[];
}

/** A converted record. */
export interface ConvertedCodingRun {
  name: string;
  dataset: string;
  resolved: boolean;
  loops: CodingLoop[];
  file: CodingReplayFile;
}

const MINI_SUBMIT = 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT';

/** The bash block of a mini-swe-agent reply (exactly one, else none: a format error). */
function bashBlock(text: string): string | null {
  const blocks = [...text.matchAll(/```bash\s*\n([\s\S]*?)\n?```/g)];
  return blocks.length === 1 ? blocks[0]![1]!.trim() : null;
}

/** Reads a mini-swe-agent `.traj.json`. */
export function readMini(json: unknown, name: string, dataset: string, resolved: boolean): CodingRecord {
  const messages = ((json as { messages?: unknown[] }).messages ?? []) as Array<{
    role: string;
    content: unknown;
    extra?: { response?: { created?: number; usage?: { total_tokens?: number; cost?: number } } };
  }>;
  const text = (c: unknown): string =>
    typeof c === 'string'
      ? c
      : Array.isArray(c)
        ? c.map((p) => (typeof p === 'string' ? p : String((p as { text?: string }).text ?? ''))).join('')
        : '';
  const steps: CodingStep[] = [];
  let t0: number | null = null;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role !== 'assistant') continue;
    const created = m.extra?.response?.created;
    if (typeof created === 'number' && t0 === null) t0 = created;
    const command = bashBlock(text(m.content));
    const reply = messages[i + 1]?.role === 'user' ? text(messages[i + 1]!.content) : '';
    if (command === null) continue; // a reply the agent refused as malformed: no call
    const rc = /^<returncode>(-?\d+)<\/returncode>/.exec(reply);
    steps.push({
      command,
      output: reply,
      exitCode: rc ? Number(rc[1]) : null,
      atMs: typeof created === 'number' && t0 !== null ? (created - t0) * 1000 : null,
      tokens: m.extra?.response?.usage?.total_tokens ?? 0,
      costUsd: m.extra?.response?.usage?.cost ?? 0,
      submit: command.includes(MINI_SUBMIT),
    });
  }
  return { name, dataset, resolved, steps };
}

/** Reads a SWE-agent `.traj`. */
export function readSweAgent(json: unknown, name: string, dataset: string, resolved: boolean): CodingRecord {
  const t = json as {
    trajectory?: Array<{ action?: string; observation?: string }>;
    info?: { model_stats?: { tokens_sent?: number; tokens_received?: number; instance_cost?: number } };
  };
  const traj = t.trajectory ?? [];
  const stats = t.info?.model_stats ?? {};
  const n = Math.max(1, traj.length);
  const tokens = Math.round(((stats.tokens_sent ?? 0) + (stats.tokens_received ?? 0)) / n);
  const costUsd = (stats.instance_cost ?? 0) / n;
  const steps: CodingStep[] = traj.map((s) => {
    const command = (s.action ?? '').trim();
    const head = command.split(/\s+/)[0] ?? '';
    return {
      command,
      output: s.observation ?? '',
      exitCode: null,
      atMs: null,
      tokens,
      costUsd,
      submit: head === 'submit' || head === 'exit_cost' || head === 'exit_context' || head === 'exit_format',
    };
  });
  return { name, dataset, resolved, steps };
}

const sha = (s: string): string => createHash('sha256').update(s).digest('hex').slice(0, 16);

/**
 * The workspace a shell tool reporting {@link WorkspaceJson} would have seen, reconstructed from
 * the command text (the records hold no file contents): files written by a heredoc or an
 * `echo`/`printf` redirect (`>` replaces, `>>` appends: the size grows by the text), `tee`,
 * `sed -i` (a substitution changes the file once — again only when something else changed it
 * in between — and an `a`/`i` insert grows it every time), a Python script that writes or
 * replaces, `git apply`/`patch`, `rm`/`mv`/`cp`/`touch`/`mkdir`, a `git checkout`/`restore` of
 * paths (back to the base); SWE-agent's `create` and `edit` (its reply names the file's new line
 * count; a refused edit — "Your changes have NOT been applied" — changes nothing). Every other
 * command changes nothing. The fingerprint is a hash of every file's state; the size, the
 * bytes (lines for SWE-agent) of the files changed since the start.
 */
export class WorkspaceSim {
  private files = new Map<string, { hash: string; size: number; lastBy: string | null }>();
  private openFile: string | null = null;

  /** The fingerprint of the workspace now. */
  fingerprint(): string {
    if (this.files.size === 0) return 'base';
    return sha(
      [...this.files]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([p, f]) => `${p}=${f.hash}`)
        .join('\n'),
    );
  }

  /** The size of what changed since the start. */
  size(): number {
    let s = 0;
    for (const f of this.files.values()) s += f.size;
    return s;
  }

  private write(path: string, hash: string, size: number, by: string): void {
    this.files.set(path, { hash, size: Math.max(0, size), lastBy: by });
  }

  private appendTo(path: string, body: string, by: string): void {
    const prev = this.files.get(path);
    this.write(path, sha(`${prev?.hash ?? path}+${body}`), (prev?.size ?? 0) + body.length, by);
  }

  /** Applies one command's effect; returns the report a shell tool would give for it. */
  apply(command: string, output: string): WorkspaceJson {
    const before = this.fingerprint();
    this.effect(command, output);
    return { before, after: this.fingerprint(), size: this.size() };
  }

  private effect(command: string, output: string): void {
    const head = command.split(/\s+/)[0] ?? '';
    // SWE-agent's editor commands.
    if (head === 'open' || head === 'create') {
      const path = command.split(/\s+/)[1] ?? '';
      this.openFile = path;
      if (head === 'create' && !this.files.has(path)) this.write(path, sha(`${path}:created`), 0, command);
      return;
    }
    if (head === 'edit' || head === 'insert' || head === 'append') {
      if (/have NOT been applied|Usage: edit|^Error/m.test(output) || this.openFile === null) return;
      const lines = /\((\d+) lines total\)/.exec(output);
      const path = /\[File: ([^\]]+?) \(\d+ lines total\)\]/.exec(output)?.[1] ?? this.openFile;
      this.write(
        path,
        sha(`${this.files.get(path)?.hash ?? path}+${command}`),
        lines ? Number(lines[1]) : 0,
        command,
      );
      return;
    }
    // Heredocs into files: `cat > f <<'EOF'`, `cat <<'EOF' > f`, `cat >> f <<EOF`.
    const heredoc =
      /^(?:cat|tee(?:\s+-a)?)\s*(?:(>>?)\s*(\S+)\s*<<-?\s*['"]?(\w+)['"]?|<<-?\s*['"]?(\w+)['"]?\s*(>>?)\s*(\S+)|(?:-a\s+)?(\S+)\s*<<-?\s*['"]?(\w+)['"]?)\s*\n([\s\S]*?)\n\s*(?:\3|\4|\8)\s*$/m.exec(
        command,
      );
    if (heredoc) {
      const op = heredoc[1] ?? heredoc[5] ?? (/^tee\s+-a/.test(command) ? '>>' : '>');
      const path = heredoc[2] ?? heredoc[6] ?? heredoc[7]!;
      const body = heredoc[9] ?? '';
      if (op === '>>') this.appendTo(path, body, command);
      else this.write(path, sha(body), body.length, command);
      return;
    }
    // Python scripts that write files (heredoc or -c): the target is each path literal written to.
    if (/^python3?\b/.test(head) && /(\.write\(|write_text\(|open\([^)]*['"]w)/.test(command)) {
      const paths = [...command.matchAll(/['"]([\w./-]+\.\w+)['"]/g)]
        .map((m) => m[1]!)
        .filter((p) => p.includes('/') || p.includes('.'));
      const target = paths.find((p) => !/\.(txt|json|log)$/.test(p)) ?? paths[0];
      if (target) {
        const prev = this.files.get(target);
        // The same script again on an unchanged file does what it did: nothing new.
        if (prev?.lastBy === command) return;
        this.write(target, sha(`${prev?.hash ?? target}+${command}`), prev?.size ?? 0, command);
      }
      return;
    }
    for (const part of command.split(/&&|;|\|\|/).map((p) => p.trim())) this.simple(part);
  }

  private simple(part: string): void {
    const words = part.split(/\s+/);
    const head = words[0] ?? '';
    if (head === 'sed' && words.includes('-i')) {
      const expr = /-i(?:\s+['"]{2})?\s+(['"])([\s\S]*?)\1/.exec(part)?.[2] ?? part;
      const path = words[words.length - 1]!;
      const prev = this.files.get(path);
      // One sed command: an address (a line, `$`, a /regex/) and `a`/`i` text (an insert: it grows
      // the file every time), `d` (a delete), or anything else (a substitution).
      const insert = /^\s*(?:\d+|\$|\/[^/]*\/)\s*[ai]\\?\s*([\s\S]*)$/.exec(expr);
      if (insert) {
        this.appendTo(path, insert[1]!, part);
      } else if (prev?.lastBy !== part) {
        // A substitution changes the file once; the same again finds nothing more to change.
        this.write(path, sha(`${prev?.hash ?? path}+${expr}`), prev?.size ?? 0, part);
      }
      return;
    }
    const redirect = /^(?:echo|printf)\s+([\s\S]*?)\s*(>>?)\s*(\S+)\s*$/.exec(part);
    if (redirect && redirect[3] !== '/dev/null') {
      if (redirect[2] === '>>') this.appendTo(redirect[3]!, redirect[1]!, part);
      else this.write(redirect[3]!, sha(redirect[1]!), redirect[1]!.length, part);
      return;
    }
    if ((head === 'git' && words[1] === 'apply') || head === 'patch') {
      this.write(`<patch:${sha(part)}>`, sha(part), part.length, part);
      return;
    }
    if (head === 'git' && (words[1] === 'checkout' || words[1] === 'restore' || words[1] === 'stash')) {
      const paths = words.slice(2).filter((w) => !w.startsWith('-') && w !== '--' && w !== 'HEAD');
      if (words[1] === 'stash' || paths.length === 0 || paths.includes('.')) this.files.clear();
      else for (const p of paths) this.files.delete(p);
      return;
    }
    if (head === 'rm' || head === 'touch' || head === 'mkdir' || head === 'mv' || head === 'cp') {
      for (const p of words.slice(1).filter((w) => !w.startsWith('-'))) {
        if (head === 'rm') this.write(p, 'deleted', 0, part);
        else if (!this.files.has(p) || head !== 'touch')
          this.write(p, sha(`${head}:${part}`), this.files.get(p)?.size ?? 0, part);
      }
    }
  }
}

/**
 * Labels, mechanical and from the record alone (the `workspace` variant's reconstruction, not a
 * replay), each a list of call indexes whose first is the loop's start:
 * - `failing`: the same command exited non-zero at least 3 times with no workspace change
 *   between the first and the last (mini-swe-agent only: SWE-agent records no exit codes);
 * - `repeat`: the same command 3 times of its own occurrences with nothing new seen (the
 *   observed progress version unchanged) and nothing changed in the workspace between;
 * - `reapplied`: the same command changed the workspace at least 3 times in a row of its own
 *   occurrences, nothing else changing it between, and each time left it larger (a file
 *   gaining its own duplicate).
 * docs/real-agents.md says which of them were read and what reading found.
 */
export function labelCodingLoops(
  calls: readonly CodingCall[],
  exitCodes: readonly (number | null)[],
): CodingLoop[] {
  const loops: CodingLoop[] = [];
  const failing = new Map<string, number[]>();
  const repeats = new Map<string, number[]>();
  const grown = new Map<string, { idx: number[]; size: number; after: string }>();
  const done = new Set<CodingLoop['kind']>();
  let changes = 0;
  const changeAt: number[] = [];
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i]!;
    changeAt.push(changes);
    if (c.tool !== 'shell') continue;
    const cmd = (c.args as { command: string }).command;
    const ws = c.result.kind === 'SUCCESS' ? c.result.workspace : undefined;
    const changed = ws !== undefined && ws.before !== ws.after;
    if (exitCodes[i] !== null && exitCodes[i] !== 0) {
      const l = [...(failing.get(cmd) ?? []), i];
      failing.set(cmd, l);
      if (l.length >= 3 && changeAt[l[l.length - 3]!] === changes && !done.has('failing')) {
        loops.push({ kind: 'failing', indexes: l.slice(-3) });
        done.add('failing');
      }
    }
    const r = [...(repeats.get(cmd) ?? []), i].slice(-3);
    repeats.set(cmd, r);
    if (
      r.length === 3 &&
      !changed &&
      calls[r[0]!]!.progressVersion === c.progressVersion &&
      changeAt[r[0]!] === changes &&
      !done.has('repeat')
    ) {
      loops.push({ kind: 'repeat', indexes: r });
      done.add('repeat');
    }
    if (changed) {
      changes += 1;
      const g = grown.get(cmd);
      const next =
        g && ws.before === g.after && ws.size > g.size
          ? { idx: [...g.idx, i], size: ws.size, after: ws.after }
          : { idx: [i], size: ws.size, after: ws.after };
      grown.set(cmd, next);
      if (next.idx.length === 3 && !done.has('reapplied')) {
        loops.push({ kind: 'reapplied', indexes: next.idx });
        done.add('reapplied');
      }
    } else if (ws !== undefined && grown.has(cmd)) grown.delete(cmd);
  }
  return loops;
}

/** Converts one record into the replay file of a variant, with its labels. */
export function convertCoding(
  rec: CodingRecord,
  variant: CodingVariant,
  profile: string,
): ConvertedCodingRun {
  const seen = new Set<string>();
  const sim = new WorkspaceSim();
  const labelSim = new WorkspaceSim();
  const calls: CodingCall[] = [];
  const labelCalls: CodingCall[] = [];
  const exits: (number | null)[] = [];
  let pv = 0;
  let labelPv = 0;
  let lastAt = 0;
  for (const s of rec.steps) {
    const atMs = s.atMs ?? lastAt;
    lastAt = atMs;
    const usage = s.tokens > 0 || s.costUsd > 0 ? { usage: { tokens: s.tokens, costUsd: s.costUsd } } : {};
    if (s.submit) {
      const end: CodingCall = {
        tool: 'complete_task',
        args: {},
        atMs,
        result: { kind: 'SUCCESS', terminal: true },
        progressVersion: pv,
        ...usage,
      };
      calls.push(end);
      labelCalls.push({ ...end, progressVersion: labelPv });
      exits.push(null);
      break;
    }
    const fails = variant === 'naive' && s.exitCode !== null && s.exitCode !== 0;
    const fact = `shell\u0000${s.output}`;
    if (!fails && !seen.has(fact)) pv += 1;
    if (!seen.has(fact)) labelPv += 1;
    seen.add(fact);
    const workspace = variant === 'workspace' ? { workspace: sim.apply(s.command, s.output) } : {};
    calls.push({
      tool: 'shell',
      args: { command: s.command },
      atMs,
      result: fails
        ? { kind: 'FATAL', code: 'tool_error', message: `command exited ${s.exitCode}` }
        : { kind: 'SUCCESS', ...workspace },
      progressVersion: pv,
      ...usage,
    });
    labelCalls.push({
      tool: 'shell',
      args: { command: s.command },
      atMs,
      result: { kind: 'SUCCESS', workspace: labelSim.apply(s.command, s.output) },
      progressVersion: labelPv,
    });
    exits.push(s.exitCode);
  }
  return {
    name: rec.name,
    dataset: rec.dataset,
    resolved: rec.resolved,
    loops: labelCodingLoops(labelCalls, exits),
    file: { name: rec.name, profile, calls },
  };
}

/** The resolved instance ids a results file names (SWE-bench `results.json` or a `results_summary.json`). */
function resolvedIds(file: string): Set<string> {
  const j = JSON.parse(readFileSync(file, 'utf8')) as {
    resolved?: string[] | number;
    resolved_ids?: string[];
    instances?: Array<{ instance_id: string; resolved: boolean }>;
  };
  if (Array.isArray(j.instances))
    return new Set(j.instances.filter((i) => i.resolved).map((i) => i.instance_id));
  if (Array.isArray(j.resolved)) return new Set(j.resolved);
  if (Array.isArray(j.resolved_ids)) return new Set(j.resolved_ids);
  throw new Error(`${file}: no resolved ids (instances[].resolved, resolved or resolved_ids)`);
}

const LABEL_FILES = ['results_summary.json', join('results', 'results.json'), 'results.json'];

function walk(dir: string, out: string[]): void {
  for (const e of readdirSync(dir).sort()) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (e.endsWith('.traj.json') || e.endsWith('.traj')) out.push(p);
  }
}

/** Every record under `dir` (sorted by data set and name), read and labelled. */
export function readCodingDir(dir: string): CodingRecord[] {
  if (!existsSync(dir))
    throw new Error(`coding traces: no directory ${dir} (see bench/traces/coding/SOURCE.md)`);
  const files: string[] = [];
  walk(dir, files);
  const labels = new Map<string, Set<string>>();
  const out: CodingRecord[] = [];
  for (const f of files) {
    const i = f.lastIndexOf(`${join('/', 'trajs')}/`);
    if (i < 0) continue;
    const root = f.slice(0, i);
    let ids = labels.get(root);
    if (!ids) {
      const lf = LABEL_FILES.map((l) => join(root, l)).find((l) => existsSync(l));
      if (!lf) throw new Error(`coding traces: no results file (${LABEL_FILES.join(', ')}) in ${root}`);
      ids = resolvedIds(lf);
      labels.set(root, ids);
    }
    const id = basename(f).replace(/\.traj(\.json)?$/, '');
    const dataset = basename(root);
    const json = JSON.parse(readFileSync(f, 'utf8')) as unknown;
    const name = `${dataset}/${id}`;
    out.push(
      f.endsWith('.traj.json')
        ? readMini(json, name, dataset, ids.has(id))
        : readSweAgent(json, name, dataset, ids.has(id)),
    );
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
