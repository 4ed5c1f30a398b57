/** Entrypoint of `npm run replay -- FILE...` (the same as `agentctl replay`). */
import { runReplay } from './replay';

const args = process.argv.slice(2).filter((a) => a !== '--');
const pretty = args.includes('--pretty');
process.exitCode = runReplay(
  args.filter((a) => a !== '--pretty'),
  undefined,
  undefined,
  { pretty },
);
