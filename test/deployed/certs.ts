/**
 * A test certificate authority and a server certificate for one IP, made with the openssl CLI into a temporary
 * folder (nothing is downloaded), and a trust-store stand-in: the CA is added to the roots Node trusts for TLS
 * connections that trust the system roots — as Amazon's roots, which sign the RDS Proxy's ACM certificate, are
 * trusted by default. A client that pins another CA (and not the system roots) still rejects it, as it would on AWS.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as TlsModule from 'node:tls';

// The module object every library's require('tls') returns (an ESM default import may be a copy under vitest).
const tls = createRequire(import.meta.url)('node:tls') as typeof TlsModule;

export interface TestCertificates {
  ca: string;
  key: string;
  cert: string;
}

export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A CA and a certificate for `ip` signed by it. */
export function makeCertificates(ip: string): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'ai4rag-certs-'));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  try {
    run(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '2',
      '-subj',
      '/CN=ai4rag test root CA',
    );
    run(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'server.key',
      '-out',
      'server.csr',
      '-subj',
      `/CN=${ip}`,
    );
    writeFileSync(join(dir, 'san.ext'), `subjectAltName=IP:${ip}\n`);
    run(
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.pem',
      '-days',
      '2',
      '-extfile',
      'san.ext',
    );
    return {
      ca: readFileSync(join(dir, 'ca.pem'), 'utf8'),
      key: readFileSync(join(dir, 'server.key'), 'utf8'),
      cert: readFileSync(join(dir, 'server.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Adds `ca` to the trusted roots of TLS connections that use the default roots (no `ca` option), or that pin a
 * bundle holding at least one public root (as the RDS Proxy bundle holds Amazon's roots, which sign the proxy's
 * certificate). A connection pinning only private CAs (e.g. an RDS instance CA alone) still rejects it, as it would
 * reject the proxy on AWS. Returns the undo.
 */
export function trustAsSystemRoot(ca: string): () => void {
  const original = tls.connect;
  // Compared without whitespace: bundles wrap PEM lines differently.
  const norm = (pem: string) => pem.replace(/\s+/g, '');
  const roots = new Set(tls.rootCertificates.map(norm));
  /** The CA list with the test CA added, when the given one trusts public roots (or is the default). */
  const withTestCa = (given: unknown): unknown => {
    if (given === undefined || given === null) return [...tls.rootCertificates, ca];
    const list = [given].flat().map((c) => String(c));
    return list.some((r) => splitPem(r).some((c) => roots.has(norm(c)))) ? [...list, ca] : given;
  };
  const patched = ((...args: unknown[]) => {
    const options = args.find((a) => a !== null && typeof a === 'object') as
      | TlsModule.ConnectionOptions
      | undefined;
    // A connection with its own secure context was configured by createSecureContext (patched below).
    if (options !== undefined && options.secureContext === undefined) {
      options.ca = withTestCa(options.ca) as TlsModule.ConnectionOptions['ca'];
    }
    return (original as (...a: unknown[]) => TlsModule.TLSSocket)(...args);
  }) as typeof tls.connect;
  tls.connect = patched;
  const originalContext = tls.createSecureContext;
  tls.createSecureContext = ((options?: TlsModule.SecureContextOptions) =>
    originalContext({
      ...options,
      ca: withTestCa(options?.ca) as TlsModule.SecureContextOptions['ca'],
    })) as typeof tls.createSecureContext;
  return () => {
    tls.connect = original;
    tls.createSecureContext = originalContext;
  };
}

/** The certificates of a PEM bundle, each as Node's root list spells them. */
function splitPem(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}
