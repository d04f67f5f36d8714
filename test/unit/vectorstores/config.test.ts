import { describe, expect, it } from 'vitest';
import {
  parsePgVectorConfig,
  pgVectorConfigFromEnv,
} from '../../../shared/src/vectorstores/config.js';
import { VectorStoreConfigError } from '../../../shared/src/vectorstores/errors.js';

describe('pgVectorConfigFromEnv', () => {
  it('applies ai4rag defaults to an empty environment', () => {
    expect(pgVectorConfigFromEnv({})).toEqual({
      host: 'localhost',
      port: 5432,
      database: 'postgres',
      user: 'postgres',
      poolMaxSize: 10,
    });
  });

  it('reads PGVECTOR_HOST/PORT/DB/USER/PASSWORD and ignores empty values', () => {
    // Act
    const config = pgVectorConfigFromEnv({
      PGVECTOR_HOST: '127.0.0.1',
      PGVECTOR_PORT: '55432',
      PGVECTOR_DB: 'rag',
      PGVECTOR_USER: 'alice',
      PGVECTOR_PASSWORD: '',
    });
    // Assess
    expect(config).toEqual({
      host: '127.0.0.1',
      port: 55432,
      database: 'rag',
      user: 'alice',
      poolMaxSize: 10,
    });
  });

  it('rejects a non-numeric port with the variable name and value', () => {
    expect(() => pgVectorConfigFromEnv({ PGVECTOR_PORT: 'abc' })).toThrow(
      'PGVECTOR_PORT must be an integer in 1..65535, got "abc"',
    );
  });

  it('rejects an out-of-range port', () => {
    expect(() => pgVectorConfigFromEnv({ PGVECTOR_PORT: '70000' })).toThrow(VectorStoreConfigError);
    expect(() => pgVectorConfigFromEnv({ PGVECTOR_PORT: '0' })).toThrow(VectorStoreConfigError);
  });
});

describe('parsePgVectorConfig', () => {
  it('names each bad field', () => {
    expect(() => parsePgVectorConfig({ poolMaxSize: 0, host: '' })).toThrow(
      /host: .*; poolMaxSize: /,
    );
  });
});
