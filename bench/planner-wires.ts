/**
 * `npm run bench:wires` (`tsx bench/planner-wires.ts`): what the AI SDK planner costs
 * per turn against the hand-written OpenAI planner, on the same model. One long-model server
 * (scripts/long-model/server.ts, OpenAI protocol: its replies are a pure function of the
 * request) writes `--turns` notes; each wire drives its planner through every turn in this
 * process (the turn engine, the SDK, HTTP to the server; no worker, no conversation store:
 * the memory is inline, alike for all), `--rounds` times, and the median round counts.
 *
 * Wires: `openai` (the `openai` SDK), `ai-sdk openai` (`@ai-sdk/openai` `.chat`), `ai-sdk
 * openai-compatible` (`@ai-sdk/openai-compatible`). Printed per wire: turns, wall ms per turn,
 * CPU ms per turn of this process (the server's share included, the same for all), and
 * whether every note was written.
 *
 * Flags: --turns N (200)  --note-chars N (300)  --rounds N (3)  --json
 */
import { performance } from 'node:perf_hooks';
import type { Observation, Planner, PlannerSpec, ToolDescriptor } from '../common/planner';
import { createAiSdkPlanner } from '../planners/ai-sdk';
import { createOpenAIPlanner } from '../planners/openai';
import { longRunGoal, startLongModelServer } from '../scripts/long-model/server';
import { cliFlags, intFlag } from '../scripts/cli-args';

const WRITE_RECORD: ToolDescriptor = {
  name: 'write_record',
  description: 'Create or replace a record.',
  effect: 'write',
  inputSchema: {
    type: 'object',
    properties: { id: { type: 'string' }, body: { type: 'string' } },
    required: ['id', 'body'],
    additionalProperties: false,
  },
};

interface WireResult {
  readonly wire: string;
  readonly turns: number;
  readonly wallMsPerTurn: number;
  readonly cpuMsPerTurn: number;
  readonly completed: boolean;
}

/** Drives `planner` until it finishes; returns the turns and whether every note was written. */
async function drive(
  planner: Planner,
  spec: PlannerSpec,
  notes: number,
): Promise<{ turns: number; ok: boolean }> {
  let memory: unknown = null;
  let observation: Observation | null = null;
  const written = new Set<string>();
  for (let turns = 1; turns <= notes + 5; turns++) {
    const out = await planner.next({
      runId: 'bench-wires',
      goal: longRunGoal(notes),
      planner: spec,
      tools: [WRITE_RECORD],
      memory,
      observation,
    });
    // The long model finishes with the finishing tool, not with a text reply.
    if (out.turn.type !== 'call' || out.turn.tool === 'complete_task') {
      return { turns, ok: written.size === notes };
    }
    const id = String((out.turn.args as { id?: unknown }).id);
    written.add(id);
    memory = out.memory;
    observation = {
      callId: out.turn.callId,
      tool: out.turn.tool,
      kind: 'SUCCESS',
      data: { id, written: true },
    };
  }
  return { turns: notes + 5, ok: false };
}

async function main(): Promise<void> {
  let turns = 200;
  let noteChars = 300;
  let rounds = 3;
  let json = false;
  for (const { flag, value } of cliFlags(process.argv.slice(2))) {
    if (flag === '--turns') turns = intFlag(flag, value(), 1);
    else if (flag === '--note-chars') noteChars = intFlag(flag, value(), 1);
    else if (flag === '--rounds') rounds = intFlag(flag, value(), 1);
    else if (flag === '--json') json = true;
    else throw new Error(`unknown flag ${flag} (--turns, --note-chars, --rounds, --json)`);
  }
  const server = await startLongModelServer({ turns, noteChars, windowChars: 100_000_000 });
  const env: NodeJS.ProcessEnv = {
    AGENT_MODEL_ENDPOINTS: JSON.stringify({
      own: { provider: 'openai', baseURL: server.baseURL },
      sdk: { provider: 'openai', baseURL: server.baseURL },
      compatible: { provider: 'openai-compatible', baseURL: server.baseURL },
    }),
  };
  const quiet = { env, maxRetries: 0, warn: () => undefined };
  const common = { model: 'long-model', maxTokens: 1024, contextTokens: 10_000_000 };
  const wires: Array<[string, Planner, PlannerSpec]> = [
    ['openai', createOpenAIPlanner(quiet), { kind: 'openai', endpoint: 'own', ...common }],
    ['ai-sdk openai', createAiSdkPlanner(quiet), { kind: 'ai-sdk', endpoint: 'sdk', ...common }],
    [
      'ai-sdk openai-compatible',
      createAiSdkPlanner(quiet),
      { kind: 'ai-sdk', endpoint: 'compatible', ...common },
    ],
  ];
  const results: WireResult[] = [];
  try {
    // One warm-up turn each: module loading is not a per-turn cost.
    for (const [, planner, spec] of wires) await drive(planner, spec, 1).catch(() => undefined);
    for (const [wire, planner, spec] of wires) {
      const samples: Array<{ wall: number; cpu: number; turns: number; ok: boolean }> = [];
      for (let r = 0; r < rounds; r++) {
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        const { turns: n, ok } = await drive(planner, spec, turns);
        const wall = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        samples.push({ wall, cpu: (cpu.user + cpu.system) / 1000, turns: n, ok });
      }
      samples.sort((a, b) => a.wall - b.wall);
      const median = samples[Math.floor(samples.length / 2)]!;
      results.push({
        wire,
        turns: median.turns,
        wallMsPerTurn: Math.round((median.wall / median.turns) * 100) / 100,
        cpuMsPerTurn: Math.round((median.cpu / median.turns) * 100) / 100,
        completed: samples.every((s) => s.ok),
      });
    }
  } finally {
    await server.close();
  }
  if (json) process.stdout.write(`${JSON.stringify({ turns, noteChars, rounds, results })}\n`);
  else {
    process.stdout.write(
      [
        `bench:wires: ${turns} notes of ${noteChars} chars, median of ${rounds} round(s), Node ${process.version}`,
        '',
        '| wire | turns | wall ms/turn | CPU ms/turn | all notes written |',
        '|---|---|---|---|---|',
        ...results.map(
          (r) =>
            `| ${r.wire} | ${r.turns} | ${r.wallMsPerTurn} | ${r.cpuMsPerTurn} | ${r.completed ? 'yes' : 'NO'} |`,
        ),
        '',
      ].join('\n'),
    );
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:wires: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
