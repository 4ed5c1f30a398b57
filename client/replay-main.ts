/** Entrypoint of `npm run replay -- FILE...` (the same as `agentctl replay`). */
import { runReplay } from './replay';

const args = process.argv.slice(2).filter((a) => a !== '--');
const pretty = args.includes('--pretty');
// `--profile NAME` or `--profile=NAME` (guard/profiles.ts); a missing name is the empty name.
let profile: string | undefined;
const files: string[] = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i]!;
  if (a === '--pretty') continue;
  if (a === '--profile') profile = args[++i] ?? '';
  else if (a.startsWith('--profile=')) profile = a.slice('--profile='.length);
  else files.push(a);
}
process.exitCode = runReplay(files, undefined, undefined, {
  pretty,
  ...(profile === undefined ? {} : { profile }),
});
