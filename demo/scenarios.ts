/**
 * The four demo scenarios as data: which script a live scripted agent runs, what an
 * operator does once it stops, and what it must end with. {@link runScenario} in
 * ./runner.ts is the only code that acts on them, so a new scenario is one more entry.
 */
import { BeforeDecision, GuardReason, ResultCode, TerminalState } from '../guard';
import type { RunOutcome } from '../client/runs';
import type { Counters } from './world-client';

/** What a run must have settled with. */
export interface Expected {
  readonly state: TerminalState;
  readonly reason: string | null;
}

/** What a run must end with: its state and reason, and the real executions of the listed tools. */
export interface ExpectedEnd extends Expected {
  readonly counters: Counters;
}

/** An operator step, taken while the run is stopped and waiting for `resume`. */
export type Step =
  /** Checks (and prints) where the run stopped. */
  | { readonly kind: 'stopped'; readonly expect: Expected }
  /** Sends the verified `resume` update; `expect` is what the workflow must answer. */
  | {
      readonly kind: 'resume';
      readonly label: string;
      readonly reason: string;
      readonly precondition: string;
      readonly expect: 'accepted' | 'refused';
    }
  /** Changes the world the way `agentctl world grant` does. */
  | { readonly kind: 'grant'; readonly permission: string };

/** One demo scenario. */
export interface Scenario {
  /** `a`, `b`, … (printed, and the start of the workflow id). */
  readonly key: string;
  /** Workflow id part after the key: `demo-<key>-<slug>-<stamp>-<rand>`. */
  readonly slug: string;
  /** Summary table name. */
  readonly title: string;
  /** The line printed before the scenario starts. */
  readonly heading: string;
  readonly goal: string;
  /** `demo/scripts/<script>.json`, run in live mode (the real demo tools answer). */
  readonly script: string;
  /** Operator steps once the run first settles (none: the first settle is the end). */
  readonly steps?: readonly Step[];
  readonly expect: ExpectedEnd;
  /** What the scenario showed, printed when it ended as expected. */
  readonly check: string | ((outcome: RunOutcome) => string);
}

/** The demo, in the order it runs (docs/cli.md "The demo" lists the same four). */
export const SCENARIOS: readonly Scenario[] = [
  {
    key: 'a',
    slug: 'research-loop',
    title: 'research loop',
    heading: 'research agent stuck in a search loop (same query, only the non-semantic requestId changes)',
    goal: 'research Temporal durability',
    script: 'research-loop',
    expect: {
      state: TerminalState.STOPPED_LOOP_GUARD,
      reason: GuardReason.SAME_CALL_REPEAT,
      counters: { search: 2 },
    },
    check:
      'the third identical search was refused before it ran (search executed 2×); the run waits durably for a verified resume',
  },
  {
    key: 'b',
    slug: 'notifier',
    title: 'notifier',
    heading: 'notifier that re-plans the same page',
    goal: 'page on-call about INC-42',
    script: 'notifier',
    expect: { state: TerminalState.COMPLETED, reason: null, counters: { send_notification: 1 } },
    check: (o) => {
      const cached = o.decisions.find((d) => d.decision === BeforeDecision.RETURN_CACHED_SUCCESS);
      return `the page was sent once; the re-plan (proposal ${cached?.index ?? '?'}) got the stored result: ${BeforeDecision.RETURN_CACHED_SUCCESS}`;
    },
  },
  {
    key: 'c',
    slug: 'deploy',
    title: 'deploy',
    heading: 'deploy agent without the deploy:billing permission',
    goal: 'ship billing 2.0.0 with release notes',
    script: 'deploy',
    steps: [
      {
        kind: 'stopped',
        expect: { state: TerminalState.NEEDS_HUMAN, reason: ResultCode.PERMISSION_DENIED },
      },
      {
        kind: 'resume',
        label: 'resume with nothing changed',
        reason: 'try again, nothing changed',
        precondition: '',
        expect: 'refused',
      },
      { kind: 'grant', permission: 'deploy:billing' },
      {
        kind: 'resume',
        label: 'resume after the grant',
        reason: 'deploy:billing granted',
        precondition: 'permission deploy:billing granted',
        expect: 'accepted',
      },
    ],
    expect: { state: TerminalState.COMPLETED, reason: null, counters: { write_record: 1, deploy: 1 } },
    check:
      'NEEDS_HUMAN → unchanged resume refused → permission granted → resumed from the checkpoint → COMPLETED; the release-notes write was not repeated (write_record 1×, deploy 1×)',
  },
  {
    key: 'd',
    slug: 'polling-job',
    title: 'polling job',
    heading: 'polling job (start_job + poll_job; the job answers PENDING, retry after 300 ms)',
    goal: 'run the nightly export',
    script: 'polling-job',
    expect: {
      state: TerminalState.COMPLETED,
      reason: null,
      counters: { start_job: 1, poll_job: 3 },
    },
    check:
      'two honoured waits (PENDING → durable timer → re-poll) and the job finished; nothing was flagged as a loop',
  },
];
