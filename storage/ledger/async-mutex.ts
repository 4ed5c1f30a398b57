/**
 * A minimal FIFO mutex. `node:sqlite` gives one synchronous connection per ledger; an async
 * transaction (commitWith awaiting a business write) must not interleave with other calls
 * on that connection, so every SQLite operation runs under this lock.
 */
export class AsyncMutex {
  private tail: Promise<void> = Promise.resolve();

  /** Runs `fn` after every previously queued function has settled. */
  run<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
