/**
 * Who listens on a local TCP port: the user owning the listening socket, read from Linux's
 * /proc/net/tcp and /proc/net/tcp6 (uid column) and named from /etc/passwd. On a machine
 * several people share, a Temporal server already on 7233 may be someone else's: the demo and
 * `npm run dev:server` say whose it is instead of silently mixing their runs. Null where the
 * system does not tell (not Linux, no /proc).
 */
import { readFileSync } from 'node:fs';

/** The owner of a listening socket. */
export interface PortOwner {
  readonly uid: number;
  /** The user name (`uid N` when /etc/passwd does not name it). */
  readonly user: string;
  /** True when it is this process's user. */
  readonly you: boolean;
}

const LISTEN = '0A';

function uidsListeningOn(port: number, file: string): number[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const uids: number[] = [];
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8 || f[3] !== LISTEN) continue;
    const local = f[1] ?? '';
    if (parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) uids.push(Number(f[7]));
  }
  return uids;
}

function userName(uid: number): string {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [name, , id] = line.split(':');
      if (name && Number(id) === uid) return name;
    }
  } catch {
    // No passwd file to read: the number says it.
  }
  return `uid ${uid}`;
}

/** The user whose process listens on `port` (any local address), or null when unknown. */
export function portOwner(port: number): PortOwner | null {
  const uid = [...uidsListeningOn(port, '/proc/net/tcp'), ...uidsListeningOn(port, '/proc/net/tcp6')][0];
  if (uid === undefined || !Number.isInteger(uid)) return null;
  return { uid, user: userName(uid), you: typeof process.getuid === 'function' && process.getuid() === uid };
}

/** "you", "user alice", or "an unknown user" (this system does not say). */
export function ownerText(owner: PortOwner | null): string {
  if (!owner) return 'a user this system does not name';
  return owner.you ? `you (${owner.user})` : `user ${owner.user}, not you`;
}
