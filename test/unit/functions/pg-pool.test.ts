import { X509Certificate } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  PG_POOL_MAX,
  pgPoolConfig,
  pgSslOptions,
  RDS_CA_BUNDLE,
} from '../../../functions/_shared/pg-pool.js';
import { ValidationError } from '../../../shared/src/errors.js';
import { probePgServer } from '../../support/pg.js';

const SECRET = {
  username: 'ai4rag_reader',
  password: 'pw',
  host: 'db.internal',
  port: 5432,
  dbname: 'ai4rag',
};

describe('RDS_CA_BUNDLE', () => {
  const certs = RDS_CA_BUNDLE.map((pem) => new X509Certificate(pem));
  const names = certs.map((c) => /CN=([^\n]+)/.exec(c.subject)?.[1] ?? '');

  it('parses as PEM X.509 CA certificates', () => {
    // Assess
    expect(certs.length).toBeGreaterThan(50);
    for (const cert of certs) expect(cert.ca).toBe(true);
  });

  it.each([
    'Amazon RDS us-east-1 Root CA RSA2048 G1',
    'Amazon RDS us-east-1 Root CA RSA4096 G1',
    'Amazon RDS us-east-1 Root CA ECC384 G1',
    'Amazon RDS eu-west-1 Root CA RSA2048 G1',
    'Amazon RDS eu-central-1 Root CA RSA2048 G1',
    'Amazon RDS ap-southeast-2 Root CA RSA2048 G1',
    // RDS Proxy endpoints present Amazon Trust (ACM) certificates.
    'Amazon Root CA 1',
    'Amazon Root CA 3',
  ])('includes %s', (name) => {
    expect(names).toContain(name);
  });

  it('holds roots that are valid today', () => {
    const root = certs[names.indexOf('Amazon RDS us-east-1 Root CA RSA2048 G1')];
    expect(root?.checkIssued(root)).toBe(true);
    expect(Date.parse(root?.validTo ?? '')).toBeGreaterThan(Date.now());
  });
});

describe('pgSslOptions', () => {
  it('verifies the server against the RDS bundle by default', () => {
    // Act
    const ssl = pgSslOptions(undefined);

    // Assess
    expect(ssl).toEqual({ ca: [...RDS_CA_BUNDLE], rejectUnauthorized: true });
    expect(pgSslOptions('verify-full')).toEqual(ssl);
    expect(pgSslOptions('')).toEqual(ssl);
  });

  it.each([
    ['require', { rejectUnauthorized: false }],
    ['disable', false],
  ] as const)('opts out explicitly with %s', (mode, expected) => {
    expect(pgSslOptions(mode)).toEqual(expected);
  });

  it('rejects an unknown mode naming the variable', () => {
    expect(() => pgSslOptions('prefer')).toThrow(ValidationError);
    expect(() => pgSslOptions('prefer')).toThrow(/PGVECTOR_SSLMODE must be one of verify-full/);
  });
});

describe('pgPoolConfig', () => {
  it('connects to the proxy named in the environment as the secret user, verifying TLS', () => {
    // Act
    const config = pgPoolConfig(
      { PGVECTOR_HOST: 'proxy.internal', PGVECTOR_PORT: '5432', PGVECTOR_DB: 'ai4rag' },
      SECRET,
    );

    // Assess
    expect(config).toMatchObject({
      host: 'proxy.internal',
      port: 5432,
      database: 'ai4rag',
      user: 'ai4rag_reader',
      password: 'pw',
      max: PG_POOL_MAX,
      ssl: { rejectUnauthorized: true },
    });
  });

  it('falls back to the secret host, port and database', () => {
    // Act
    const config = pgPoolConfig({ PGVECTOR_SSLMODE: 'disable' }, { ...SECRET, port: '6543' });

    // Assess
    expect(config).toMatchObject({
      host: 'db.internal',
      port: 6543,
      database: 'ai4rag',
      user: 'ai4rag_reader',
      ssl: false,
    });
  });

  it('uses PGVECTOR_USER/PASSWORD without a secret', () => {
    // Act
    const config = pgPoolConfig({
      PGVECTOR_USER: 'me',
      PGVECTOR_PASSWORD: 'pw2',
      PGVECTOR_SSLMODE: 'require',
    });

    // Assess
    expect(config).toMatchObject({ host: 'localhost', user: 'me', password: 'pw2' });
    expect(config.ssl).toEqual({ rejectUnauthorized: false });
  });

  it('refuses a plain-text server under the default mode (no silent downgrade)', async (ctx) => {
    // Prepare
    const server = await probePgServer();
    if (server === undefined) return ctx.skip();
    const pool = new pg.Pool(
      pgPoolConfig({
        PGVECTOR_HOST: server.host,
        PGVECTOR_PORT: String(server.port),
        PGVECTOR_DB: server.database,
        PGVECTOR_USER: server.user,
      }),
    );

    // Act / Assess
    try {
      const ssl = await pool
        .query("SELECT current_setting('ssl') AS on")
        .then((r) => r.rows[0]?.on as string);
      // A server with TLS: the connection must then have verified it, which needs an RDS-signed certificate.
      expect(ssl).toBe('on');
    } catch (error) {
      expect(String(error)).toMatch(/does not support SSL|certificate|self.signed/i);
    } finally {
      await pool.end();
    }
  });
});

describe('pgPoolConfig with readSecret', () => {
  it('asks for the password on each new connection, so a rotated one is used', async () => {
    // Prepare
    let current = 'old';
    const config = pgPoolConfig({ PGVECTOR_HOST: 'proxy' }, SECRET, {
      readSecret: async () => ({ ...SECRET, password: current }),
    });
    const password = config.password as () => Promise<string>;

    // Act
    const before = await password();
    current = 'new';
    const after = await password();

    // Assess
    expect([before, after]).toEqual(['old', 'new']);
  });
});
