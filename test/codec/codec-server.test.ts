/**
 * The codec server over real HTTP: CORS for the UI origin (with preflight), bearer auth,
 * encode/decode round trips in Temporal's remote-codec JSON, bad input; and the
 * `agentctl codec-server` command as a process.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { AesGcmCodec, KeyRing, startCodecServer, type CodecServerHandle } from '../../codec';
import { ROOT } from '../client/cli-helpers';

const UI = 'http://127.0.0.1:18233';
const TOKEN = 'codec-test-token';
const MARKER = 'marker-codec-server-9b1e';
const key = randomBytes(32);
const codec = new AesGcmCodec(new KeyRing(new Map([['k1', key]]), 'k1'));

const toJson = (payloads: Payload[]) =>
  temporal.api.common.v1.Payloads.toObject(temporal.api.common.v1.Payloads.fromObject({ payloads }), {
    bytes: String,
  }) as { payloads: unknown[] };
const fromJson = (body: unknown) =>
  temporal.api.common.v1.Payloads.fromObject(body as object).payloads as Payload[];
const plain = () => defaultPayloadConverter.toPayload({ query: MARKER }) as Payload;

describe('codec server', () => {
  let open: CodecServerHandle;
  let authed: CodecServerHandle;
  beforeAll(async () => {
    open = await startCodecServer({ codec, port: 0, origins: [UI] });
    authed = await startCodecServer({ codec, port: 0, origins: [UI], token: TOKEN });
  });
  afterAll(async () => {
    await open?.close();
    await authed?.close();
  });

  const post = (
    server: CodecServerHandle,
    path: string,
    body: unknown,
    headers: Record<string, string> = {},
  ) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('answers the UI origin preflight with the headers the UI sends, and refuses other origins', async () => {
    const ok = await fetch(`${authed.url}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: UI,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-namespace',
      },
    });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI);
    expect(ok.headers.get('access-control-allow-methods')).toContain('POST');
    for (const h of ['authorization', 'content-type', 'x-namespace'])
      expect(ok.headers.get('access-control-allow-headers')).toContain(h);

    const evil = await fetch(`${authed.url}/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(evil.status).toBe(403);
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    // A POST from a foreign origin is refused before anything is decoded.
    const foreign = await post(open, '/decode', toJson(await codec.encode([plain()])), {
      origin: 'http://evil.example',
    });
    expect(foreign.status).toBe(403);
    expect(await foreign.text()).not.toContain(MARKER);
  });

  it('with a token: refuses a request without it or with a wrong one (401), accepts the right one', async () => {
    const body = toJson(await codec.encode([plain()]));
    const none = await post(authed, '/decode', body);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(await none.text()).not.toContain(MARKER);
    const wrong = await post(authed, '/decode', body, { authorization: 'Bearer nope' });
    expect(wrong.status).toBe(401);
    const right = await post(authed, '/decode', body, { authorization: `Bearer ${TOKEN}`, origin: UI });
    expect(right.status).toBe(200);
    expect(right.headers.get('access-control-allow-origin')).toBe(UI); // the browser may read it
    expect(defaultPayloadConverter.fromPayload(fromJson(await right.json())[0]!)).toEqual({ query: MARKER });
  });

  it('round-trips /encode then /decode over HTTP; /encode output is ciphertext the SDK codec reads', async () => {
    const enc = await post(open, '/encode', toJson([plain()]));
    expect(enc.status).toBe(200);
    const encText = await enc.text();
    expect(encText).not.toContain(Buffer.from(MARKER).toString('base64').slice(0, 12));
    const encrypted = fromJson(JSON.parse(encText));
    expect(defaultPayloadConverter.fromPayload((await codec.decode(encrypted))[0]!)).toEqual({
      query: MARKER,
    });
    const dec = await post(open, '/decode', JSON.parse(encText));
    expect(defaultPayloadConverter.fromPayload(fromJson(await dec.json())[0]!)).toEqual({ query: MARKER });
  });

  it('answers bad input with 400 and a message, and other paths with 404', async () => {
    expect((await post(open, '/decode', 'not json')).status).toBe(400);
    expect((await post(open, '/decode', { nope: 1 })).status).toBe(400);
    const tampered = toJson(await codec.encode([plain()]));
    (tampered.payloads[0] as { data: string }).data = Buffer.from(randomBytes(40)).toString('base64');
    const r = await post(open, '/decode', tampered);
    expect(r.status).toBe(400);
    expect(await r.text()).toMatch(/failed authentication/);
    expect((await post(open, '/other', {})).status).toBe(404);
  });
});

describe('agentctl codec-server', () => {
  it('serves the keys of AGENT_CODEC_KEYS with AGENT_CODEC_SERVER_TOKEN', async () => {
    const child = spawn(
      join(ROOT, 'node_modules/.bin/tsx'),
      ['bin/agentctl.ts', 'codec-server', '--port', '0', '--quiet'],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          AGENT_CODEC_KEYS: `k1:${key.toString('base64')}`,
          AGENT_CODEC_SERVER_TOKEN: TOKEN,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      let out = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (b: Buffer) => {
          out += b.toString();
          const m = /codec server on (http:\/\/\S+)/.exec(out);
          if (m) resolve(m[1]!);
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      expect(out).toContain('Authorization: Bearer <token> required');
      const body = JSON.stringify(toJson(await codec.encode([plain()])));
      const denied = await fetch(`${url}/decode`, { method: 'POST', body });
      expect(denied.status).toBe(401);
      const r = await fetch(`${url}/decode`, {
        method: 'POST',
        body,
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(defaultPayloadConverter.fromPayload(fromJson(await r.json())[0]!)).toEqual({ query: MARKER });
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  });
});
