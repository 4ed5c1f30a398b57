/**
 * `npm run dev:server` and the demo point the dev server's Web UI at a codec server by default
 * (issue 38 item 2): the flags, and `startDevServer({ uiCodec })` against a real dev server — the
 * UI is started with `--ui-codec-endpoint` at a codec server that decodes this process's
 * payloads for the UI's origin only, and `stop()` closes it.
 */
import { createServer, type Server } from 'node:net';
import type { Payload } from '@temporalio/common';
import { loadPayloadCodec } from '../../codec';
import { freePort, startDevServer } from '../../devserver/dev-server';
import { DEV_SERVER_USAGE, parseDevServerArgs } from '../../devserver/dev-server-cli';
import { ownerText, portOwner } from '../../devserver/port-owner';
import '../helpers/temporal-env'; // the test key ring

describe('npm run dev:server flags', () => {
  it('serves the codec server by default; --no-codec leaves it out; --codec is still accepted', () => {
    expect(parseDevServerArgs([])).toEqual({ codec: true, codecPort: undefined });
    expect(parseDevServerArgs(['--no-codec'])).toEqual({ codec: false, codecPort: undefined });
    expect(parseDevServerArgs(['--codec'])).toEqual({ codec: true, codecPort: undefined });
    expect(parseDevServerArgs(['--codec-port', '9999'])).toEqual({ codec: true, codecPort: 9999 });
    expect(parseDevServerArgs(['--codec-port=0'])).toEqual({ codec: true, codecPort: 0 });
  });

  it('refuses what it does not know, naming it', () => {
    expect(() => parseDevServerArgs(['--codec-port'])).toThrow('--codec-port needs a port number');
    expect(() => parseDevServerArgs(['--codec-port', 'x'])).toThrow('got x');
    expect(() => parseDevServerArgs(['--codec-port', '70000'])).toThrow('0-65535');
    expect(() => parseDevServerArgs(['--codecs'])).toThrow('unknown option --codecs');
  });

  it('--port and --ui-port choose the ports, --help asks for the usage; a bad port is named', () => {
    expect(parseDevServerArgs(['--port', '7244', '--ui-port=8244'])).toEqual({
      codec: true,
      codecPort: undefined,
      port: 7244,
      uiPort: 8244,
    });
    expect(parseDevServerArgs(['--help']).help).toBe(true);
    expect(parseDevServerArgs(['-h']).help).toBe(true);
    expect(DEV_SERVER_USAGE).toMatch(/--port N[\s\S]*--ui-port N[\s\S]*--codec-port N[\s\S]*--no-codec/);
    expect(() => parseDevServerArgs(['--port', '0'])).toThrow('--port needs a port number (1-65535), got 0');
    expect(() => parseDevServerArgs(['--ui-port'])).toThrow(
      '--ui-port needs a port number (1-65535), got nothing',
    );
  });
});

describe('who listens on a port', () => {
  it('names this process\'s user as "you" (Linux /proc); null where nobody listens', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const owner = portOwner(port);
      if (process.platform === 'linux') {
        expect(owner).toMatchObject({ uid: process.getuid?.(), you: true });
        expect(ownerText(owner)).toMatch(/^you \(/);
      }
    } finally {
      await new Promise((r) => server.close(r));
    }
    expect(portOwner(port)).toBeNull();
    expect(ownerText(null)).toBe('a user this system does not name');
  });
});

describe('startDevServer({ uiCodec })', () => {
  it('points the UI at a loopback codec server (a free port when the asked one is taken), closed by stop()', async () => {
    const codec = loadPayloadCodec(process.env).codec!;
    // The asked-for codec port is taken: the server must still start, on another port.
    const taken: Server = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const takenPort = (taken.address() as { port: number }).port;
    const uiPort = await freePort();
    const server = await startDevServer({
      ip: '127.0.0.1',
      port: 0,
      uiPort,
      dbFile: null,
      quiet: true,
      logLevel: 'error',
      uiCodec: codec,
      uiCodecPort: takenPort,
    });
    try {
      const url = server.uiCodecUrl!;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(url).not.toBe(`http://127.0.0.1:${takenPort}`);
      // It decodes this process's payloads for the UI's origin, and for no other origin.
      const [sealed] = (await codec.encode([
        { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"why it stopped"') },
      ])) as [Payload];
      const body = JSON.stringify({
        payloads: [
          {
            metadata: Object.fromEntries(
              Object.entries(sealed.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
            ),
            data: Buffer.from(sealed.data!).toString('base64'),
          },
        ],
      });
      const decode = (origin: string) =>
        fetch(`${url}/decode`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin },
          body,
        });
      const ok = await decode(`http://127.0.0.1:${uiPort}`);
      expect(ok.status).toBe(200);
      const decoded = (await ok.json()) as { payloads: { data: string }[] };
      expect(Buffer.from(decoded.payloads[0]!.data, 'base64').toString()).toBe('"why it stopped"');
      expect((await decode('http://evil.example')).status).toBe(403);
    } finally {
      await server.stop();
      taken.close();
    }
    await expect(fetch(`${server.uiCodecUrl!}/decode`, { method: 'POST' })).rejects.toThrow();
  }, 90_000);

  it('starts no codec server for a headless dev server (no UI to point at it)', async () => {
    const server = await startDevServer({
      ip: '127.0.0.1',
      port: 0,
      dbFile: null,
      quiet: true,
      headless: true,
      uiCodec: loadPayloadCodec(process.env).codec!,
    });
    try {
      expect(server.uiCodecUrl).toBeUndefined();
    } finally {
      await server.stop();
    }
  }, 90_000);
});
