/**
 * The chaos run's Temporal dev server: its state in a file (`--db-filename`), so a server
 * that is SIGKILLed and started again on the same port and file still has every run.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  FAST_DISPATCH_DYNAMIC_CONFIG,
  freePort,
  startDevServer,
  type DevServerHandle,
} from '../../devserver/dev-server';
import { ensureTemporalCli } from '../../devserver/temporal-cli';

/** Fast workflow-task dispatch (devserver/dev-server.ts): more steps fit in the chaos run's time. */
export { FAST_DISPATCH_DYNAMIC_CONFIG };

/** Writes a wrapper around the CLI that adds `--dynamic-config-value`s. */
export async function cliWithDynamicConfig(dir: string, values: readonly string[]): Promise<string> {
  const real = await ensureTemporalCli({ quiet: true });
  const file = join(dir, 'temporal-cli');
  writeFileSync(
    file,
    `#!/bin/sh\nexec ${JSON.stringify(real)} "$@" ${values.map((v) => `--dynamic-config-value ${v}`).join(' ')}\n`,
  );
  chmodSync(file, 0o755);
  return file;
}

/** A dev server that can be killed and brought back on the same port and file. */
export class ChaosTemporal {
  private handle: DevServerHandle | null = null;

  private constructor(
    readonly port: number,
    readonly dbFile: string,
    private readonly cliPath: string,
  ) {}

  /** Starts a server on a free loopback port with its state in `dir`. */
  static async start(dir: string): Promise<ChaosTemporal> {
    const t = new ChaosTemporal(
      await freePort(),
      join(dir, 'temporal.db'),
      await cliWithDynamicConfig(dir, FAST_DISPATCH_DYNAMIC_CONFIG),
    );
    await t.up();
    return t;
  }

  /** `127.0.0.1:<port>`. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  private async up(): Promise<void> {
    this.handle = await startDevServer({
      ip: '127.0.0.1',
      port: this.port,
      dbFile: this.dbFile,
      headless: true,
      quiet: true,
      logLevel: 'error',
      cliPath: this.cliPath,
    });
  }

  /** SIGKILLs the server (no graceful shutdown) and starts it again on the same port and file. */
  async restart(): Promise<void> {
    const h = this.handle;
    if (h?.pid !== undefined) {
      process.kill(h.pid, 'SIGKILL');
      await h.exited;
    }
    this.handle = null;
    await this.up();
  }

  /** Stops the server. Idempotent. */
  async stop(): Promise<void> {
    await this.handle?.stop(5_000);
    this.handle = null;
  }
}
