/**
 * The floor's activities (bench/floor.ts): a plain call, and the hand-written exactly-once
 * write: claim the idempotency key, do the insert and store the result in ONE SQLite
 * transaction (WAL, synchronous=FULL, like the ledger), answering a duplicate from the record.
 */
import Database from 'better-sqlite3';

/** One floor step's arguments and answer. */
export interface FloorStep {
  readonly tag: string;
  readonly n: number;
}

/** The floor's activities. */
export interface FloorActivities {
  floorPlain(a: FloorStep): Promise<{ n: number }>;
  floorOnce(a: FloorStep): Promise<{ n: number }>;
}

/** The activities over a SQLite file of their own (created here). */
export function createFloorActivities(file: string): FloorActivities & { close(): void } {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`CREATE TABLE IF NOT EXISTS floor_keys (key TEXT PRIMARY KEY, result TEXT);
           CREATE TABLE IF NOT EXISTS floor_effects (key TEXT PRIMARY KEY, n INTEGER NOT NULL)`);
  const find = db.prepare('SELECT result FROM floor_keys WHERE key = ?');
  const claim = db.prepare('INSERT INTO floor_keys (key) VALUES (?)');
  const effect = db.prepare('INSERT INTO floor_effects (key, n) VALUES (?, ?)');
  const done = db.prepare('UPDATE floor_keys SET result = ? WHERE key = ?');
  const once = db.transaction((key: string, n: number): { n: number } => {
    const prior = find.get(key) as { result: string | null } | undefined;
    if (prior?.result) return JSON.parse(prior.result) as { n: number };
    claim.run(key);
    effect.run(key, n);
    const result = { n };
    done.run(JSON.stringify(result), key);
    return result;
  });
  return {
    async floorPlain(a) {
      return { n: a.n };
    },
    async floorOnce(a) {
      // BEGIN IMMEDIATE, as the ledger: the write lock before the key is read.
      return once.immediate(`floor:${a.tag}:${a.n}`, a.n);
    },
    close() {
      db.close();
    },
  };
}
