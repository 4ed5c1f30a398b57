/** `npm run demo -- --once` end to end against the shared dev server (reused, not started). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { uniqueTaskQueue } from '../helpers/temporal-env';
import { runTsx } from './cli-helpers';

it('runs the four scenarios with the expected outcomes', async () => {
  const started = Date.now();
  const r = await runTsx('demo/main.ts', ['--once', '--data-dir', mkdtempSync(join(tmpdir(), 'demo-'))], {
    TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
    TEMPORAL_TASK_QUEUE: uniqueTaskQueue('demo'),
  });
  const out = r.stdout;
  if (r.code !== 0) throw new Error(`demo exited ${r.code}\n${out}\n${r.stderr}`);
  expect(out).toContain('reusing it');
  // a: the loop guard stops the third identical search before it runs.
  expect(out).toMatch(/a research loop\s+STOPPED_LOOP_GUARD\s+same_call_repeat\s+search=2\s+ok/);
  // b: the page is sent once; the re-plan is answered from the ledger.
  expect(out).toMatch(
    /a research loop[\s\S]*b notifier\s+COMPLETED\s+-\s+complete_task=1 send_notification=1\s+ok/,
  );
  expect(out).toContain('return_cached_success');
  // c: NEEDS_HUMAN, unchanged resume refused, grant, resume accepted, COMPLETED without repeating the write.
  expect(out).toMatch(/= NEEDS_HUMAN \(permission_denied\)/);
  expect(out).toMatch(/resume with nothing changed → REFUSED/);
  expect(out).toMatch(/resume after the grant → ACCEPTED/);
  expect(out).toMatch(/c deploy\s+COMPLETED\s+-\s+complete_task=1 deploy=1 write_record=1\s+ok/);
  // d: honoured waits, then done.
  expect(out).toMatch(/poll_job wait_bounded → PENDING:job_running/);
  expect(out).toMatch(/d polling job\s+COMPLETED\s+-\s+complete_task=1 poll_job=3 start_job=1\s+ok/);
  // A progress line per decision and a UI link per scenario.
  expect(out).toMatch(/· step 1 before search execute/);
  // Step numbers count what ran: the third search, refused, is not shown as step 2.
  expect(out).toMatch(/· refused before search stop \(same_call_repeat\) — it did not run/);
  expect(out).not.toMatch(/· step \d+ before search stop/);
  expect(out.match(/UI: +http:\/\/\S+\/namespaces\/default\/workflows\/demo-/g)).toHaveLength(4);
  expect(out).toMatch(/demo finished in/);
  expect(Date.now() - started).toBeLessThan(60_000);
});
