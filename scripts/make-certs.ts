/**
 * Makes the certificates of the self-hosted production topology (docker-compose.yml,
 * docs/deploy.md "Production topology"): a private CA, a server certificate for the
 * Temporal frontend (also used between Temporal's own services) and a client certificate
 * for workers and agentctl (mTLS: the frontend refuses a client without one).
 *
 *   npx tsx scripts/make-certs.ts              # → deploy/certs/{ca,server,client}.{pem,key}
 *   npx tsx scripts/make-certs.ts --out DIR --server-name temporal.example.com --days 365 [--force]
 *
 * Node's crypto cannot issue X.509 certificates, so this drives the system's `openssl`
 * (OpenSSL 1.1.1 or 3.x; on Debian/Ubuntu `apt-get install openssl`). Keys are EC P-256.
 * Nothing is downloaded. The output directory gets a `.gitignore` of `*`, so keys are
 * never committed by accident.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** What {@link makeCerts} makes. */
export interface MakeCertsOptions {
  /** Output directory (created). */
  readonly out: string;
  /** DNS names / IPs the server certificate is valid for; the first is its CN. */
  readonly serverNames?: readonly string[];
  /** The client certificate's CN (what the server's authorizer would see). */
  readonly clientName?: string;
  /** Validity of the leaf certificates in days (the CA gets ten times as long). */
  readonly days?: number;
  /** Overwrite existing files. */
  readonly force?: boolean;
  /** The openssl binary (default `openssl` on PATH, or `OPENSSL`). */
  readonly openssl?: string;
}

/** The files {@link makeCerts} writes, by role. */
export interface CertFiles {
  readonly caCert: string;
  readonly caKey: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

/** The server names of the compose stack: the `temporal` service, and localhost for agentctl on the host. */
export const DEFAULT_SERVER_NAMES: readonly string[] = Object.freeze(['temporal', 'localhost', '127.0.0.1']);

const isIp = (name: string): boolean => /^\d{1,3}(\.\d{1,3}){3}$/.test(name) || name.includes(':');

/** Fails with a clear message when openssl is missing. */
function opensslVersion(bin: string): string {
  try {
    return execFileSync(bin, ['version'], { encoding: 'utf8' }).trim();
  } catch (err) {
    throw new Error(
      `make-certs: cannot run "${bin}" (${(err as Error).message}); install OpenSSL (apt-get install openssl) or set OPENSSL`,
      { cause: err },
    );
  }
}

/** Makes the CA, server and client certificates; returns their paths. */
export function makeCerts(o: MakeCertsOptions): CertFiles {
  const bin = o.openssl ?? process.env.OPENSSL ?? 'openssl';
  opensslVersion(bin);
  const serverNames = o.serverNames?.length ? o.serverNames : DEFAULT_SERVER_NAMES;
  const days = o.days ?? 825;
  if (!Number.isInteger(days) || days <= 0) throw new Error('make-certs: --days must be a positive integer');
  const out = path.resolve(o.out);
  const files: CertFiles = {
    caCert: path.join(out, 'ca.pem'),
    caKey: path.join(out, 'ca.key'),
    serverCert: path.join(out, 'server.pem'),
    serverKey: path.join(out, 'server.key'),
    clientCert: path.join(out, 'client.pem'),
    clientKey: path.join(out, 'client.key'),
  };
  const existing = Object.values(files).filter((f) => fs.existsSync(f));
  if (existing.length > 0 && !o.force) {
    throw new Error(`make-certs: ${existing.join(', ')} exist; pass --force to replace them`);
  }
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, '.gitignore'), '*\n');

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'make-certs-'));
  const run = (args: string[]) => execFileSync(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const key = (file: string) => {
    run(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file]);
    fs.chmodSync(file, 0o600);
  };
  const ext = (name: string, lines: string[]) => {
    const file = path.join(tmp, `${name}.ext`);
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    return file;
  };
  /** A leaf certificate signed by the CA, with the given extensions. */
  const leaf = (keyFile: string, certFile: string, cn: string, extensions: string[]) => {
    const csr = path.join(tmp, `${path.basename(certFile)}.csr`);
    run(['req', '-new', '-key', keyFile, '-subj', `/O=agent-loop-guard/CN=${cn}`, '-out', csr]);
    run([
      'x509', '-req', '-in', csr, '-CA', files.caCert, '-CAkey', files.caKey, '-CAcreateserial',
      '-days', String(days), '-sha256', '-extfile', ext(path.basename(certFile), extensions), '-out', certFile,
    ]); // prettier-ignore
  };
  try {
    key(files.caKey);
    const caExt = ext('ca', [
      '[req]',
      'distinguished_name=dn',
      '[dn]',
      '[v3_ca]',
      'basicConstraints=critical,CA:TRUE,pathlen:0',
      'keyUsage=critical,keyCertSign,cRLSign',
      'subjectKeyIdentifier=hash',
    ]);
    run([
      'req', '-x509', '-new', '-key', files.caKey, '-subj', '/O=agent-loop-guard/CN=agent-loop-guard CA',
      '-days', String(days * 10), '-sha256', '-config', caExt, '-extensions', 'v3_ca', '-out', files.caCert,
    ]); // prettier-ignore

    key(files.serverKey);
    const san = serverNames.map((n) => (isIp(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
    // clientAuth too: Temporal's services present this certificate to each other (internode mTLS).
    leaf(files.serverKey, files.serverCert, serverNames[0]!, [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth,clientAuth',
      `subjectAltName=${san}`,
    ]);

    key(files.clientKey);
    leaf(files.clientKey, files.clientCert, o.clientName ?? 'agent-loop-guard-worker', [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=clientAuth',
    ]);
    fs.rmSync(path.join(out, 'ca.srl'), { force: true });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`make-certs: openssl failed${stderr ? `: ${stderr}` : ''}`, { cause: err });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return files;
}

function parseArgs(argv: readonly string[]): MakeCertsOptions {
  let out = 'deploy/certs';
  const serverNames: string[] = [];
  let days: number | undefined;
  let force = false;
  let clientName: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`make-certs: ${a} needs a value`);
      return v;
    };
    if (a === '--out') out = value();
    else if (a === '--server-name') serverNames.push(value());
    else if (a === '--client-name') clientName = value();
    else if (a === '--days') days = Number(value());
    else if (a === '--force') force = true;
    else
      throw new Error(
        `make-certs: unknown argument ${a} (--out DIR, --server-name NAME…, --client-name CN, --days N, --force)`,
      );
  }
  return { out, serverNames, days, force, ...(clientName ? { clientName } : {}) };
}

async function main(): Promise<void> {
  const files = makeCerts(parseArgs(process.argv.slice(2)));
  for (const [role, file] of Object.entries(files)) console.log(`${role.padEnd(10)} ${file}`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
