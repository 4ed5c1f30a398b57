/**
 * scripts/make-certs.ts makes a CA, a server and a client certificate with the system's
 * openssl; checked by a real mTLS handshake (node:tls on a free port): the server accepts
 * the client certificate and refuses a client without one.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { makeCerts, type CertFiles } from '../../scripts/make-certs';

let files: CertFiles;
let server: tls.Server;
let port: number;

beforeAll(async () => {
  files = makeCerts({ out: fs.mkdtempSync(path.join(os.tmpdir(), 'alg-certs-')), days: 2 });
  server = tls.createServer(
    {
      cert: fs.readFileSync(files.serverCert),
      key: fs.readFileSync(files.serverKey),
      ca: fs.readFileSync(files.caCert),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (socket) => socket.end(`hello ${socket.getPeerCertificate().subject.CN}`),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
});

function connect(opts: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = tls.connect({ host: '127.0.0.1', port, ca: fs.readFileSync(files.caCert), ...opts });
    socket.on('data', (d: Buffer) => (data += d.toString()));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

describe('scripts/make-certs.ts', () => {
  it('makes a server certificate for the compose frontend, signed by the CA, keys private', () => {
    const cert = new X509Certificate(fs.readFileSync(files.serverCert));
    expect(cert.checkIssued(new X509Certificate(fs.readFileSync(files.caCert)))).toBe(true);
    expect(cert.subjectAltName).toBe('DNS:temporal, DNS:localhost, IP Address:127.0.0.1');
    expect(fs.statSync(files.clientKey).mode & 0o077).toBe(0);
    expect(fs.readFileSync(path.join(path.dirname(files.caCert), '.gitignore'), 'utf8')).toBe('*\n');
  });

  it('a client with the client certificate completes the mTLS handshake, verifying the server name', async () => {
    const reply = await connect({
      servername: 'temporal',
      cert: fs.readFileSync(files.clientCert),
      key: fs.readFileSync(files.clientKey),
    });
    expect(reply).toBe('hello agent-loop-guard-worker');
  });

  it('a client without a certificate is refused', async () => {
    await expect(
      connect({ servername: 'localhost' }).then((r) => (r === '' ? Promise.reject(new Error('refused')) : r)),
    ).rejects.toThrow();
  });

  it('refuses to overwrite existing files without --force', () => {
    expect(() => makeCerts({ out: path.dirname(files.caCert) })).toThrow(/exist; pass --force/);
  });
});
