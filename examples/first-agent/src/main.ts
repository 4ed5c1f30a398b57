/**
 * first-agent: a worker hosting one tool of its own (`save_note`) and the tools of one MCP
 * server (`mcp__docs__lookup`), and one scripted run in live mode (the script proposes,
 * the real tools answer). The script repeats a lookup; the guard refuses the third
 * identical call before it reaches the server, and the note, proposed twice, is written
 * once. Exits 0 only when all of that is what happened.
 *
 * Environment: TEMPORAL_ADDRESS (default localhost:7233), RUN_ID (default a fresh id).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  connectClient,
  connectToTemporal,
  createAgentWorker,
  loadConnectionOptions,
  openWorkerDeps,
  startAgentRun,
  waitForAgentRun,
  type RunInput,
} from 'agent-loop-guard';
import { createSaveNoteTool, readNotes } from './notes-tool';

const ROOT = resolve(__dirname, '..');
const DATA = join(ROOT, 'data');
const TASK_QUEUE = 'first-agent';

/** The run: a note (proposed twice), then the same lookup three times. No progress hook: new results and the committed write are progress. */
const lookup = { tool: 'mcp__docs__lookup', args: { topic: 'temporal' } };
const note = { tool: 'save_note', args: { key: 'temporal', text: 'Temporal runs workflows durably.' } };
const input: RunInput = {
  goal: 'Look Temporal up and keep a note of it',
  planner: {
    kind: 'scripted',
    live: true,
    script: { name: 'first-agent', calls: [note, note, lookup, lookup, lookup] },
  },
  // A stopped run waits this long for a resume, then closes with its StopReport.
  resumeWindowMs: 1_000,
};

function docsCalls(): number {
  const file = join(DATA, 'docs-calls.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { lookup: number }).lookup : 0;
}

async function run(): Promise<boolean> {
  // A fresh start every time: the counters below must count this run only.
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  const notesFile = join(DATA, 'notes.json');

  const { connectionOptions, namespace } = loadConnectionOptions();
  // Waits for a server started at the same time (AGENT_TEMPORAL_WAIT s, default 120).
  const connection = await connectToTemporal(connectionOptions, namespace);
  const client = await connectClient();
  const deps = await openWorkerDeps({
    ledgerUrl: `sqlite:${join(DATA, 'ledger.db')}`,
    tools: [createSaveNoteTool(notesFile)],
    // Spawns the MCP servers of agent.config.json and adds their tools as mcp__SERVER__TOOL.
    configPath: join(ROOT, 'agent.config.json'),
  });
  console.log(`tools: ${deps.registry.names().join(', ')}`);
  try {
    // Registers the package's search attributes on the namespace if they are missing.
    const worker = await createAgentWorker({ connection, namespace, taskQueue: TASK_QUEUE, deps });
    const settled = await worker.runUntil(async () => {
      const handle = await startAgentRun(client.client, {
        workflowId: process.env.RUN_ID ?? `first-agent-${randomUUID()}`,
        taskQueue: TASK_QUEUE,
        input,
      });
      console.log(`started ${handle.workflowId} on ${client.address}`);
      return waitForAgentRun(client.client, handle, { untilWaiting: false, timeoutMs: 60_000 });
    });

    const { outcome } = settled;
    const counters = { save_note: readNotes(notesFile).writes, mcp__docs__lookup: docsCalls() };
    console.log(JSON.stringify({ ...outcome, counters }, null, 2));

    const expected: [string, boolean][] = [
      ['the run closed', settled.closed],
      ['it stopped STOPPED_LOOP_GUARD', outcome.terminal_state === 'STOPPED_LOOP_GUARD'],
      ['because of same_call_repeat', outcome.reason === 'same_call_repeat'],
      ['on the lookup', outcome.report?.blocked_call?.tool === lookup.tool],
      ['the note was written once', counters.save_note === 1],
      ['its second proposal was answered from the ledger', outcome.cached === 1],
      ['the refused lookup never reached the server', counters.mcp__docs__lookup === 2],
    ];
    for (const [what, ok] of expected) console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
    return expected.every(([, ok]) => ok);
  } finally {
    await client.close();
    await connection.close();
    await deps.close();
  }
}

run().then(
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
