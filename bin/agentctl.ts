/**
 * The agentctl entry point (bin/agentctl.js launches it; `npm run agentctl` runs it through
 * tsx): the product's commands (client/agentctl.ts) plus the demo's `world` group
 * (demo/world-command.ts), which only an entry point may bring in.
 */
import '../common/node-floor-check'; // first: below the Node floor, the message and its remedy
import { cli } from '../client/agentctl';
import { worldCommand } from '../demo/world-command';

/** Runs agentctl on `argv` and sets process.exitCode. */
export function run(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  // `agentctl … | head`: a reader that went away is the end of the output, not a crash.
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw err;
    });
  return cli(argv, [worldCommand]);
}

if (require.main === module) void run();
