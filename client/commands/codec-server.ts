/**
 * `agentctl codec-server`: serves the payload codec (codec/codec-server.ts) so the Temporal
 * Web UI (`temporal server start-dev --ui-codec-endpoint URL`, or the UI's own "Codec Server"
 * setting) and the `temporal` CLI (`--codec-endpoint URL [--codec-auth "Bearer TOKEN"]`) show
 * decoded payloads to the operators who can reach it. It uses the same keys as the workers
 * (AGENT_CODEC_KEYS / AGENT_CODEC_KEY_FILE / the default key file, codec/load-codec.ts) and
 * never creates a key: a new key would decrypt nothing. Without one it exits 2 naming the
 * absolute path it looked at.
 */
import { Command } from 'commander';
import {
  CodecError,
  DEFAULT_CODEC_PORT,
  DEFAULT_UI_ORIGIN,
  loadPayloadCodec,
  startCodecServer,
  type CodecServerHandle,
} from '../../codec';
import { CliError, Exit } from '../format';
import { nonNegativeInt, type Ctx } from './common';

/** Options of the command. */
interface CodecServerOpts {
  port: number;
  host: string;
  origin?: string[];
  token?: string;
  quiet?: boolean;
}

/**
 * Starts the codec server from the command's options and environment (exported for tests).
 * Bad key configuration or AGENT_CODEC=off → exit 2.
 */
export async function startCodecServerCommand(ctx: Ctx, o: CodecServerOpts): Promise<CodecServerHandle> {
  let loaded;
  try {
    loaded = loadPayloadCodec(ctx.env, { warn: (m) => ctx.io.err(`codec-server: ${m}\n`) });
  } catch (err) {
    if (err instanceof CodecError)
      throw new CliError(
        Exit.USAGE,
        `${err.message}\n(agentctl codec-server never creates a key: a key of its own would decrypt nothing)`,
      );
    throw err;
  }
  if (!loaded.codec)
    throw new CliError(Exit.USAGE, 'AGENT_CODEC=off: payloads are not encrypted, there is nothing to decode');
  const token = o.token ?? (ctx.env.AGENT_CODEC_SERVER_TOKEN?.trim() || undefined);
  const origins = o.origin?.length ? o.origin : [DEFAULT_UI_ORIGIN];
  const server = await startCodecServer({
    codec: loaded.codec,
    host: o.host,
    port: o.port,
    origins,
    token,
    ...(o.quiet ? {} : { log: (line: string) => ctx.io.err(`codec-server: ${line}\n`) }),
  });
  ctx.io.out(
    [
      `codec server on ${server.url} (keys: ${loaded.source})`,
      `  CORS origins: ${origins.join(', ')}`,
      `  auth: ${token ? 'Authorization: Bearer <token> required' : 'none (anyone who reaches it can decode)'}`,
      `  Web UI: temporal server start-dev --ui-codec-endpoint ${server.url}`,
      `  CLI:    temporal workflow show -w <id> --codec-endpoint ${server.url}${token ? ' --codec-auth "Bearer $AGENT_CODEC_SERVER_TOKEN"' : ''}`,
      '',
    ].join('\n'),
  );
  return server;
}

/** The `codec-server` command. */
export function codecServerCommand(ctx: Ctx): Command {
  return new Command('codec-server')
    .description('Serve the payload codec to the Temporal Web UI and CLI (decoded payloads for operators)')
    .option('--port <port>', `port (0 picks a free one)`, nonNegativeInt, DEFAULT_CODEC_PORT)
    .option('--host <host>', 'bind address (whoever reaches it can decrypt)', '127.0.0.1')
    .option(
      '--origin <url>',
      `Web UI origin allowed by CORS, repeatable (default ${DEFAULT_UI_ORIGIN})`,
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option('--token <token>', 'require Authorization: Bearer <token> (default AGENT_CODEC_SERVER_TOKEN)')
    .option('--quiet', 'no log line per request')
    .action(async (o: CodecServerOpts) => {
      const server = await startCodecServerCommand(ctx, o);
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await server.close();
    });
}
