import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChunkRow,
  encodeChunkRows,
} from '../../../shared/src/vectorstores/pgvector/copy-binary.js';
import { openPglite, type PgliteSqlClient } from '../../../shared/src/vectorstores/sql-client.js';

const TABLE = `CREATE TABLE t (id text primary key, document_id text, sequence_number int, content text,
  metadata jsonb, embedding vector(3), bm25 sparsevec(1000000000), token_count int, version text)`;
const COLUMNS = [
  'id',
  'document_id',
  'sequence_number',
  'content',
  'metadata',
  'embedding',
  'bm25',
  'token_count',
  'version',
];

// Values exactly representable as float4, and jsonb text in PostgreSQL's canonical output form.
const ROW: ChunkRow = {
  id: 'c-1',
  documentId: 'guide/ünïcode.md',
  sequenceNumber: 7,
  content: 'Tabs\tnew\nlines, "quotes", back\\slash and ✓',
  metadataJson: '{"document_id": "guide/ünïcode.md", "sequence_number": 7}',
  embedding: [0.5, -0.25, 1.5],
  bm25Indices: [3, 17, 999_999_999],
  bm25Values: [1.25, 0.5, 2],
  bm25Dim: 1_000_000_000,
  tokenCount: 42,
  version: 'v1-ab',
};

describe('encodeChunkRows (binary COPY)', () => {
  let client: PgliteSqlClient;

  beforeAll(async () => {
    client = await openPglite({});
    await client.query(TABLE);
  });

  afterAll(async () => {
    await client.close();
  });

  it('produces exactly the bytes PostgreSQL itself writes for the same row', async () => {
    // Prepare: the same row stored through the text path, exported by the server in binary
    await client.query(
      `INSERT INTO t VALUES ($1, $2, $3, $4, $5::jsonb, '[0.5,-0.25,1.5]', '{3:1.25,17:0.5,999999999:2}/1000000000', 42, 'v1-ab')`,
      [ROW.id, ROW.documentId, ROW.sequenceNumber, ROW.content, ROW.metadataJson],
    );
    const exported = await client.db.query(`COPY t TO '/dev/blob' WITH (FORMAT binary)`);
    const expected = new Uint8Array(await (exported.blob as Blob).arrayBuffer());
    // Act
    const encoded = encodeChunkRows([ROW]);
    // Assess
    expect(Buffer.from(encoded).toString('hex')).toBe(Buffer.from(expected).toString('hex'));
    await client.query('TRUNCATE t');
  });

  it('loads through COPY and reads back identically', async () => {
    // Prepare
    const second: ChunkRow = {
      ...ROW,
      id: 'c-2',
      sequenceNumber: 8,
      bm25Indices: [],
      bm25Values: [],
    };
    // Act
    const loaded = await client.copyFrom?.('t', COLUMNS, encodeChunkRows([ROW, second]));
    // Assess
    expect(loaded).toBe(2);
    const rows = await client.query<Record<string, unknown>>(
      'SELECT id, document_id, sequence_number, content, metadata, embedding::text AS e, bm25::text AS b, token_count FROM t ORDER BY id',
    );
    expect(rows.rows).toEqual([
      {
        id: 'c-1',
        document_id: ROW.documentId,
        sequence_number: 7,
        content: ROW.content,
        metadata: { document_id: ROW.documentId, sequence_number: 7 },
        e: '[0.5,-0.25,1.5]',
        b: '{3:1.25,17:0.5,999999999:2}/1000000000',
        token_count: 42,
      },
      {
        id: 'c-2',
        document_id: ROW.documentId,
        sequence_number: 8,
        content: ROW.content,
        metadata: { document_id: ROW.documentId, sequence_number: 7 },
        e: '[0.5,-0.25,1.5]',
        b: '{}/1000000000',
        token_count: 42,
      },
    ]);
  });

  it('rejects mismatched sparse arrays', () => {
    expect(() => encodeChunkRows([{ ...ROW, bm25Values: [1] }])).toThrow(RangeError);
  });
});
