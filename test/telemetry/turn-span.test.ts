/**
 * A conversation's turn is one OpenTelemetry span (issue 33): `conversation.turn`, from the agent
 * handing the turn to the person until it came back, with the turn's number, kind and outcome —
 * never what the person wrote.
 */
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { createAgentSinkTelemetry } from '../../worker/telemetry/agent-sink';
import { Attr, SpanNames } from '../../worker/telemetry/names';
import { WorkflowTraceContexts } from '../../worker/telemetry/workflow-spans';

it('a turn becomes a conversation.turn span over the wait, without the text', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const sink = createAgentSinkTelemetry({
    tracer: provider.getTracer('t'),
    meter: null,
    contexts: new WorkflowTraceContexts(),
  });
  sink.turn({
    runId: 'conv-1',
    turn: 3,
    kind: 'question',
    startedAtMs: 1_700_000_000_000,
    endedAtMs: 1_700_000_004_500,
    outcome: 'answered',
    messages: 2,
  });
  const [span] = exporter.getFinishedSpans();
  expect(span?.name).toBe(SpanNames.TURN);
  expect(span?.attributes).toMatchObject({
    [Attr.AGENT_RUN_ID]: 'conv-1',
    [Attr.TURN]: 3,
    [Attr.TURN_KIND]: 'question',
    [Attr.TURN_OUTCOME]: 'answered',
    [Attr.TURN_MESSAGES]: 2,
    [Attr.WORKFLOW_ID]: 'conv-1',
  });
  const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;
  expect(ms(span!.endTime) - ms(span!.startTime)).toBeCloseTo(4500, 0);
});
