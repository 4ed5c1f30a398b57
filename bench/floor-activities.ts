/**
 * The floor's activities (bench/floor.ts): a plain call, and the hand-written exactly-once
 * write: claim the idempotency key, do the insert and store the result in ONE SQLite
 * transaction (WAL, synchronous=FULL, like the ledger), answering a duplicate from the record.
 */
import { openSqlite } from '../storage/sqlite-driver';

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
  const db = openSqlite(file);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
  db.exec(`CREATE TABLE IF NOT EXISTS floor_keys (key TEXT PRIMARY KEY, result TEXT);
           CREATE TABLE IF NOT EXISTS floor_effects (key TEXT PRIMARY KEY, n INTEGER NOT NULL)`);
  const find = db.prepare('SELECT result FROM floor_keys WHERE key = ?');
  const claim = db.prepare('INSERT INTO floor_keys (key) VALUES (?)');
  const effect = db.prepare('INSERT INTO floor_effects (key, n) VALUES (?, ?)');
  const done = db.prepare('UPDATE floor_keys SET result = ? WHERE key = ?');
  const once = (key: string, n: number): { n: number } => {
    // BEGIN IMMEDIATE, as the ledger: the write lock before the key is read.
    db.exec('BEGIN IMMEDIATE');
    try {
      const prior = find.get(key) as { result: string | null } | undefined;
      const result = prior?.result ? (JSON.parse(prior.result) as { n: number }) : { n };
      if (!prior?.result) {
        claim.run(key);
        effect.run(key, n);
        done.run(JSON.stringify(result), key);
      }
      db.exec('COMMIT');
      return result;
    } catch (err) {
      db.exec('ROLLBACK');
      throw err;
    }
  };
  return {
    async floorPlain(a) {
      return { n: a.n };
    },
    async floorOnce(a) {
      return once(`floor:${a.tag}:${a.n}`, a.n);
    },
    close() {
      db.close();
    },
  };
}
