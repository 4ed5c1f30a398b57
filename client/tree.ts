/**
 * An agent tree (docs/spec.md §7.14) as operators read it: each run's state, reason and spend,
 * with the sub-agents it spawned below it (`agentctl tree`, `getAgentRunTree`). Read from
 * each run's `status` query (a closed run without a worker: from its result).
 */
import type { Client } from '@temporalio/client';
import type { ChildSummary } from '../common/sub-agents';
import { runStatus } from './run-reads';

/** One run of a tree and the runs it spawned. */
export interface AgentTreeNode {
  readonly workflowId: string;
  readonly goal: string;
  /** RUNNING, WAITING, or the terminal state. */
  readonly phase: string;
  readonly terminalState: string | null;
  readonly reason: string | null;
  /** Steps and spend so far, its own sub-agents included. */
  readonly steps: number;
  readonly usage: { readonly tokens: number; readonly costUsd: number };
  /** What its parent reserved for it (null on the root). */
  readonly reserved: ChildSummary['reserved'] | null;
  readonly children: AgentTreeNode[];
}

/** The tree below `workflowId` (at most `maxNodes` runs; deeper ones are left out). */
export async function getAgentRunTree(
  client: Client,
  workflowId: string,
  maxNodes = 500,
): Promise<AgentTreeNode> {
  let budget = maxNodes;
  const visit = async (id: string, summary: ChildSummary | null): Promise<AgentTreeNode> => {
    budget -= 1;
    const handle = client.workflow.getHandle(id);
    const status = await runStatus(handle, await handle.describe());
    const children: AgentTreeNode[] = [];
    for (const c of status.children ?? []) {
      if (budget <= 0) break;
      children.push(await visit(c.workflowId, c));
    }
    return {
      workflowId: id,
      goal: status.goal || summary?.goal || '',
      phase: status.phase,
      terminalState: status.terminalState,
      reason: status.guardReason,
      steps: status.steps,
      usage: status.usage,
      reserved: summary?.reserved ?? null,
      children,
    };
  };
  return visit(workflowId, null);
}

/** The tree as indented lines: id, phase, reason, steps and spend (of the reservation, for a child). */
export function formatTree(root: AgentTreeNode): string {
  const lines: string[] = [];
  const of = (used: string, cap: number | null | undefined) =>
    cap === null || cap === undefined ? used : `${used}/${cap}`;
  const walk = (n: AgentTreeNode, prefix: string, last: boolean, top: boolean) => {
    const state = n.terminalState && n.terminalState !== n.phase ? `${n.phase} ${n.terminalState}` : n.phase;
    const cost = `$${Number(n.usage.costUsd.toFixed(6))}`;
    const cells = [
      n.workflowId,
      state,
      n.reason ?? '-',
      `steps ${of(String(n.steps), n.reserved?.steps)}`,
      `cost ${of(cost, n.reserved?.costUsd === null || n.reserved === null ? null : n.reserved.costUsd)}`,
      `tokens ${of(String(n.usage.tokens), n.reserved?.tokens)}`,
      JSON.stringify(n.goal.length > 60 ? `${n.goal.slice(0, 57)}...` : n.goal),
    ];
    lines.push(`${top ? '' : `${prefix}${last ? '└─ ' : '├─ '}`}${cells.join('  ')}`);
    const next = top ? '' : `${prefix}${last ? '   ' : '│  '}`;
    n.children.forEach((c, i) => walk(c, next, i === n.children.length - 1, false));
  };
  walk(root, '', true, true);
  return `${lines.join('\n')}\n`;
}
