import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDbInitHandler,
  type DbInitDeps,
  DbInitError,
  type DbInitEvent,
} from '../../functions/db-init/handler.js';
import { ValidationError } from '../../shared/src/errors.js';

const PROPS = {
  host: 'proxy.example.internal',
  port: '5432',
  database: 'ai4rag',
  secretArn: 'arn:aws:secretsmanager:eu-west-1:000000000000:secret:db-AbCdEf',
  extension: 'vector',
};
const SECRET = JSON.stringify({ username: 'ai4rag_admin', password: 's3cret' });

const event = (RequestType: DbInitEvent['RequestType']): DbInitEvent => ({
  RequestType,
  ResourceProperties: PROPS,
  ...(RequestType === 'Create' ? {} : { PhysicalResourceId: 'ai4rag-extension-vector' }),
});

describe('DbInitFunction handler', () => {
  let db: PGlite;
  const connects: unknown[] = [];
  let ended = 0;
  let deps: DbInitDeps;

  beforeAll(async () => {
    db = await PGlite.create({ extensions: { vector } });
    deps = {
      readSecret: async (arn) => (arn === PROPS.secretArn ? SECRET : '{}'),
      connect: async (options) => {
        connects.push(options);
        return {
          query: async (sql: string) => ({ rows: (await db.query(sql)).rows as never }),
          end: async () => {
            ended += 1;
          },
        };
      },
    };
  });
  afterAll(async () => {
    await db.close();
  });

  it('creates the vector extension on Create and reports its version', async () => {
    // Act
    const result = await createDbInitHandler(deps)(event('Create'));

    // Assess
    const { rows } = await db.query<{ extversion: string }>(
      "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
    );
    expect(rows).toHaveLength(1);
    expect(result).toEqual({
      PhysicalResourceId: 'ai4rag-extension-vector',
      Data: { extension: 'vector', version: rows[0]!.extversion },
    });
    expect(connects).toEqual([
      {
        host: 'proxy.example.internal',
        port: 5432,
        database: 'ai4rag',
        user: 'ai4rag_admin',
        password: 's3cret',
      },
    ]);
    expect(ended).toBe(1);
  });

  it('is idempotent on Update', async () => {
    // Act
    const result = await createDbInitHandler(deps)(event('Update'));

    // Assess
    expect(result.PhysicalResourceId).toBe('ai4rag-extension-vector');
    expect(ended).toBe(2);
  });

  it('leaves the database alone on Delete', async () => {
    // Prepare
    const before = connects.length;

    // Act
    const result = await createDbInitHandler(deps)(event('Delete'));

    // Assess
    expect(result).toEqual({ PhysicalResourceId: 'ai4rag-extension-vector' });
    expect(connects).toHaveLength(before);
  });

  it('rejects an extension name that is not an identifier', async () => {
    // Prepare
    const bad: DbInitEvent = {
      RequestType: 'Create',
      ResourceProperties: { ...PROPS, extension: 'vector; DROP TABLE x' },
    };

    // Act
    const run = createDbInitHandler(deps)(bad);

    // Assess
    await expect(run).rejects.toBeInstanceOf(ValidationError);
  });

  it('rejects a secret without credentials', async () => {
    // Act
    const run = createDbInitHandler({ ...deps, readSecret: async () => '{"username":"x"}' })(
      event('Create'),
    );

    // Assess
    await expect(run).rejects.toThrow('database secret lacks username/password');
  });

  it('wraps a connection failure with its cause', async () => {
    // Prepare
    const refused = new Error('ECONNREFUSED');

    // Act
    const error = await createDbInitHandler({
      ...deps,
      connect: async () => {
        throw refused;
      },
    })(event('Create')).then(
      () => new Error('expected a rejection'),
      (e: unknown) => e as Error,
    );

    // Assess
    expect(error).toBeInstanceOf(DbInitError);
    expect(error.message).toBe('cannot connect to proxy.example.internal:5432/ai4rag');
    expect(error.cause).toBe(refused);
  });
});
