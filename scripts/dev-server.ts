/**
 * `npm run dev:server`: a local Temporal dev server (Web UI, search attributes, fast dispatch)
 * and the codec server. The parts live in devserver/dev-server.ts; this is the entry point.
 */
import { main } from '../devserver/dev-server-cli';

main().catch((err: unknown) => {
  process.stderr.write(`[dev-server] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
