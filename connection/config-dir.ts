/**
 * The user's configuration directory for agent-loop-guard's own files (the payload key ring,
 * the checkpoint seal key): `$XDG_CONFIG_HOME/agent-loop-guard` when XDG_CONFIG_HOME is an
 * absolute path (a relative one is ignored, as the XDG spec says), else
 * `<home>/.config/agent-loop-guard` (home: HOME, else the OS's home directory). Always
 * absolute, so a worker, agentctl and the codec server started anywhere find the same files.
 */
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** The directory, or null when no home directory can be found (the caller names its own variable). */
export function agentConfigDir(env: NodeJS.ProcessEnv = process.env): string | null {
  const xdg = env.XDG_CONFIG_HOME?.trim();
  if (xdg && isAbsolute(xdg)) return join(xdg, 'agent-loop-guard');
  let home = env.HOME?.trim();
  if (!home || !isAbsolute(home)) {
    try {
      home = homedir();
    } catch {
      home = '';
    }
  }
  return home && isAbsolute(home) ? join(home, '.config', 'agent-loop-guard') : null;
}
