/**
 * The converter of recorded AgentDojo runs of real models
 * (bench/traces/agentdojo/, see its SOURCE.md) into replay files (docs/spec.md §6) and their
 * labels. Pure and deterministic: the same run gives the same file, byte for byte.
 *
 *   tsx bench/traces/agentdojo.ts --out DIR [PIPELINE ...]   # writes DIR/<pipeline>/<suite>__<task>.json
 *                                                            # and DIR/labels.jsonl
 *   npm run replay -- DIR/gpt-4o-2024-05-13/*.json           # decides them (profile llm, the files say so)
 *
 * One AgentDojo run is a chat: the user's task, then assistant messages with `tool_calls`
 * (`{function, args, id}`), each answered by a `tool` message (`content`, and `error` when the
 * tool raised), until an assistant message without tool calls (the answer). The mapping:
 *
 * - Each tool call is a replay call, in the recorded order (parallel calls of one message in
 *   their order). `args` as recorded.
 * - **Result**: `error` set → `{"kind": "FATAL", "code": "tool_error", "message": error}` (an
 *   error the tool did not declare: at the `llm` profile the replay hands it to the model as
 *   PRECONDITION `tool_error`, as the durable LLM run does); otherwise SUCCESS. A call with no
 *   recorded answer (the run broke off) is a tool error "no tool result recorded".
 * - **Writes** ({@link isWriteTool}): tools that change the environment, by a rule on the name
 *   (AgentDojo's tools are named by verb). A write gets `"effect": "write"` in `tools` and an
 *   `operationKey` naming the business operation, `<tool>:<hash of its canonical args>` (a
 *   `defineTool` write needs one: the same operation with the same args is the same operation).
 * - **Progress** (`progressVersion`): the durable run's observed progress (docs/spec.md §7.8 item
 *   4) computed from the record: +1 for a write's first SUCCESS under its key, +1 for a read's
 *   SUCCESS whose content (tool + text) the run has not seen before; an error never.
 * - **Time** (`atMs`): AgentDojo records a run's total `duration` (seconds), not each turn's.
 *   The converter spreads it evenly over the model's turns: assistant message i of T ends at
 *   (i + 1) · duration / T, and its calls are proposed then.
 * - **The end**: a final assistant answer becomes a `complete_task` call (terminal SUCCESS) at
 *   `duration`, as an LLM run of this project finishes. A run that ended without an
 *   answer (an API error) has none and replays to PARTIAL `planner_exhausted`.
 * - The file says `"profile": "llm"`; `--profile default` on the command line overrides it.
 *
 * Labels, from the record alone (never from a replay):
 * - `success`: AgentDojo's `utility` (the task's own check of the environment).
 * - `loop` (a genuine loop, {@link labelLoop}): the same call (tool and canonical args) failed
 *   at least {@link LOOP_MIN_FAILURES} times with no successful write between the first and the
 *   last of those failures; the label lists the indexes of the failing calls.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { canonicalJson, hashCanonical } from '../../guard/canonical';

/** Where the committed transcripts are. */
export const AGENTDOJO_DIR = join(__dirname, 'agentdojo');

/** A tool call as AgentDojo records it. */
export interface AgentDojoToolCall {
  function: string;
  args?: Record<string, unknown> | null;
  id?: string | null;
}
/** A message of an AgentDojo run. */
export interface AgentDojoMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: unknown;
  tool_calls?: AgentDojoToolCall[] | null;
  tool_call_id?: string | null;
  tool_call?: AgentDojoToolCall | null;
  error?: string | null;
}
/** One recorded AgentDojo run (`runs/<pipeline>/<suite>/<task>/none/none.json`). */
export interface AgentDojoRun {
  suite_name: string;
  pipeline_name: string;
  user_task_id: string;
  messages: AgentDojoMessage[];
  error: string | null;
  utility: boolean;
  duration?: number | null;
}
/** One line of a committed `<pipeline>.jsonl.gz`. */
export interface RawRun {
  path: string;
  run: AgentDojoRun;
}

/** A replay file as JSON (docs/spec.md §6.1), the converter's output. */
export interface ReplayFileJson {
  name: string;
  profile: 'llm';
  /** Only with `--set` (a what-if over the profile's defaults); the converter's own files have none. */
  config?: Record<string, number>;
  tools: Record<string, { effect: 'write' }>;
  calls: Array<{
    tool: string;
    args: unknown;
    operationKey?: string;
    atMs: number;
    result: { kind: 'SUCCESS'; terminal?: true } | { kind: 'FATAL'; code: 'tool_error'; message: string };
    progressVersion: number;
  }>;
}

/** A labelled loop: the indexes (into `calls`) of the same call's recorded failures. */
export interface LoopLabel {
  tool: string;
  indexes: number[];
}

/** A converted run. */
export interface ConvertedRun {
  /** `<pipeline>/<suite>/<user_task>`. */
  name: string;
  dataset: string;
  success: boolean;
  /** The run ended in an error of AgentDojo's pipeline (e.g. the model's API), not an answer. */
  apiError: boolean;
  loop: LoopLabel | null;
  /** The number of model turns and the assumed time of each (ms). */
  turns: number;
  msPerTurn: number;
  file: ReplayFileJson;
}

/** A failure of the same call this many times with no write between is a labelled loop. */
export const LOOP_MIN_FAILURES = 3;

const WRITE_VERBS = [
  'add',
  'append',
  'cancel',
  'create',
  'delete',
  'invite',
  'post',
  'remove',
  'reschedule',
  'reserve',
  'schedule',
  'send',
  'share',
  'update',
];

/**
 * Whether an AgentDojo tool changes the environment: its name starts with one of the verbs of
 * AgentDojo's state-changing tools (send_money, update_password, create_file, reserve_hotel,
 * post_webpage, …). Every other tool there reads (get_, search_, read_, list_, check_).
 */
export function isWriteTool(name: string): boolean {
  return WRITE_VERBS.includes(name.split('_')[0]!);
}

/** Reads a committed `<pipeline>.jsonl.gz` (or a plain `.jsonl`). */
export function readDataset(file: string): RawRun[] {
  const buf = readFileSync(file);
  const text = file.endsWith('.gz') ? gunzipSync(buf).toString('utf8') : buf.toString('utf8');
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l, i) => {
      const v = JSON.parse(l) as Partial<RawRun>;
      if (typeof v.path !== 'string' || typeof v.run !== 'object' || v.run === null)
        throw new Error(`${file}: line ${i + 1}: expected {"path", "run"}`);
      return v as RawRun;
    });
}

/** The dataset name of a committed file: its pipeline. */
export function datasetName(file: string): string {
  return basename(file).replace(/\.jsonl(\.gz)?$/, '');
}

function contentText(content: unknown): string {
  return typeof content === 'string' ? content : canonicalJson(content ?? null);
}

/** Converts one recorded run (see the module comment for the mapping). */
export function convertRun(raw: RawRun): ConvertedRun {
  const { run } = raw;
  const parts = raw.path.split('/');
  const dataset = parts[1] ?? run.pipeline_name;
  const name = `${dataset}/${run.suite_name}/${run.user_task_id}`;
  const messages = run.messages ?? [];
  const turns = messages.filter((m) => m.role === 'assistant').length;
  const durationMs = Math.max(0, (run.duration ?? 0) * 1000);
  const msPerTurn = turns > 0 ? durationMs / turns : 0;

  const tools: ReplayFileJson['tools'] = {};
  const calls: ReplayFileJson['calls'] = [];
  const seenFacts = new Set<string>();
  const committed = new Set<string>();
  let pv = 0;
  let turn = -1;
  let answered = false;
  for (let m = 0; m < messages.length; m++) {
    const msg = messages[m]!;
    if (msg.role !== 'assistant') continue;
    turn += 1;
    const atMs = Math.round((turn + 1) * msPerTurn);
    const proposed = msg.tool_calls ?? [];
    if (proposed.length === 0) {
      answered = true;
      continue;
    }
    answered = false;
    // The tool messages that answer this turn: up to the next assistant message.
    const replies: AgentDojoMessage[] = [];
    for (let k = m + 1; k < messages.length && messages[k]!.role !== 'assistant'; k++) {
      if (messages[k]!.role === 'tool') replies.push(messages[k]!);
    }
    proposed.forEach((tc, j) => {
      const reply =
        (tc.id ? replies.find((r) => r.tool_call_id === tc.id) : undefined) ??
        (replies.length === proposed.length ? replies[j] : undefined);
      const args = tc.args ?? {};
      const write = isWriteTool(tc.function);
      const error = reply?.error ?? null;
      const operationKey = write ? `${tc.function}:${hashCanonical(args)}` : undefined;
      if (write) tools[tc.function] = { effect: 'write' };
      if (error === null && reply !== undefined) {
        if (write) {
          if (!committed.has(operationKey!)) pv += 1;
          committed.add(operationKey!);
        } else {
          const fact = `${tc.function}\u0000${contentText(reply.content)}`;
          if (!seenFacts.has(fact)) pv += 1;
          seenFacts.add(fact);
        }
      }
      calls.push({
        tool: tc.function,
        args,
        ...(operationKey ? { operationKey } : {}),
        atMs,
        result:
          error !== null
            ? { kind: 'FATAL', code: 'tool_error', message: error }
            : reply === undefined
              ? { kind: 'FATAL', code: 'tool_error', message: 'no tool result recorded' }
              : { kind: 'SUCCESS' },
        progressVersion: pv,
      });
    });
  }
  if (answered) {
    calls.push({
      tool: 'complete_task',
      args: {},
      atMs: Math.round(durationMs),
      result: { kind: 'SUCCESS', terminal: true },
      progressVersion: pv,
    });
  }
  const file: ReplayFileJson = { name, profile: 'llm', tools: sortKeys(tools), calls };
  return {
    name,
    dataset,
    success: run.utility === true,
    apiError: run.error !== null && run.error !== undefined,
    loop: labelLoop(file),
    turns,
    msPerTurn,
    file,
  };
}

function sortKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * The loop rule, mechanical and from the record alone: the same call (tool + canonical args)
 * whose recorded result is an error at least {@link LOOP_MIN_FAILURES} times, with no successful
 * write between the first and the last of those failures. Returns the first such call's
 * failing indexes (counted from its first failure after the latest successful write).
 */
export function labelLoop(file: Pick<ReplayFileJson, 'calls' | 'tools'>): LoopLabel | null {
  const failures = new Map<string, number[]>();
  for (let i = 0; i < file.calls.length; i++) {
    const c = file.calls[i]!;
    const write = file.tools[c.tool]?.effect === 'write';
    if (c.result.kind === 'SUCCESS') {
      if (write) failures.clear(); // a successful write can change any call's outcome
      continue;
    }
    const key = `${c.tool}\u0000${canonicalJson(c.args)}`;
    const list = failures.get(key) ?? [];
    list.push(i);
    failures.set(key, list);
    if (list.length === LOOP_MIN_FAILURES) return { tool: c.tool, indexes: collectAll(file, key, list) };
  }
  return null;
}

/** Every failure of the labelled call up to the next successful write (the loop's full length). */
function collectAll(file: Pick<ReplayFileJson, 'calls' | 'tools'>, key: string, first: number[]): number[] {
  const out = [...first];
  for (let i = first[first.length - 1]! + 1; i < file.calls.length; i++) {
    const c = file.calls[i]!;
    if (c.result.kind === 'SUCCESS') {
      if (file.tools[c.tool]?.effect === 'write') break;
      continue;
    }
    if (`${c.tool}\u0000${canonicalJson(c.args)}` === key) out.push(i);
  }
  return out;
}

/** The committed data sets (sorted), optionally only the named pipelines. */
export function datasetFiles(dir = AGENTDOJO_DIR, only: readonly string[] = []): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl.gz') || f.endsWith('.jsonl'))
    .filter((f) => only.length === 0 || only.includes(datasetName(f)))
    .sort()
    .map((f) => join(dir, f));
}

/**
 * Writes every run of `files` as a replay file `out/<pipeline>/<suite>__<task>.json`, and
 * `out/labels.jsonl` (one line per run: name, file, success, apiError, loop, turns, msPerTurn).
 * Returns the converted runs with their file paths, in a stable order.
 */
export function writeReplayFiles(
  files: readonly string[],
  out: string,
  config?: Record<string, number>,
): Array<ConvertedRun & { path: string }> {
  const done: Array<ConvertedRun & { path: string }> = [];
  for (const f of files) {
    for (const raw of readDataset(f)) {
      const c = convertRun(raw);
      if (config && Object.keys(config).length > 0) c.file = { ...c.file, config: { ...config } };
      const dir = join(out, c.dataset);
      mkdirSync(dir, { recursive: true });
      const path = join(dir, `${c.name.split('/').slice(1).join('__')}.json`);
      writeFileSync(path, JSON.stringify(c.file, null, 1) + '\n');
      done.push({ ...c, path });
    }
  }
  const labels = done.map((c) =>
    JSON.stringify({
      name: c.name,
      file: c.path,
      success: c.success,
      apiError: c.apiError,
      loop: c.loop,
      turns: c.turns,
      msPerTurn: Math.round(c.msPerTurn),
    }),
  );
  writeFileSync(join(out, 'labels.jsonl'), labels.join('\n') + '\n');
  return done;
}

function main(argv: readonly string[]): void {
  let out: string | undefined;
  const only: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--out') out = argv[++i];
    else if (a.startsWith('--out=')) out = a.slice(6);
    else if (a.startsWith('--')) throw new Error(`unknown flag ${a} (usage: --out DIR [PIPELINE ...])`);
    else only.push(a);
  }
  if (!out) throw new Error('--out DIR is required');
  const files = datasetFiles(AGENTDOJO_DIR, only);
  if (files.length === 0) throw new Error(`no data set named ${only.join(', ')} in ${AGENTDOJO_DIR}`);
  const done = writeReplayFiles(files, out);
  process.stdout.write(`${done.length} replay files in ${out} (labels: ${join(out, 'labels.jsonl')})\n`);
}

if (require.main === module) main(process.argv.slice(2));
