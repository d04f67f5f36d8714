import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChunkRow,
  encodeChunkRows,
  encodeChunkRowsWithRids,
  encodePostings,
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

  it('with row ids: the bytes PostgreSQL writes for the row and its id, the id written after the rest', async () => {
    // Prepare: a table with the id column, one row stored through the text path, exported in binary
    await client.query(`CREATE TABLE tr (LIKE t, rid bigint)`);
    const rid = 2 ** 40 + 12_345; // past 32 bits
    await client.query(
      `INSERT INTO tr VALUES ($1, $2, $3, $4, $5::jsonb, '[0.5,-0.25,1.5]', '{3:1.25,17:0.5,999999999:2}/1000000000', 42, 'v1-ab', $6)`,
      [ROW.id, ROW.documentId, ROW.sequenceNumber, ROW.content, ROW.metadataJson, String(rid)],
    );
    const exported = await client.db.query(`COPY tr TO '/dev/blob' WITH (FORMAT binary)`);
    const expected = new Uint8Array(await (exported.blob as Blob).arrayBuffer());
    // Act
    const encoded = encodeChunkRowsWithRids([ROW]);
    const before = Buffer.from(encoded.bytes).toString('hex');
    encoded.setRids([rid]);
    // Assert
    expect(Buffer.from(encoded.bytes).toString('hex')).toBe(Buffer.from(expected).toString('hex'));
    expect(before).not.toBe(Buffer.from(expected).toString('hex'));
    expect(() => encoded.setRids([1, 2])).toThrow('2 row ids for 1 rows');
    expect(() => encoded.setRids([-1])).toThrow(RangeError);
    expect(() => encoded.setRids([2 ** 53])).toThrow(RangeError);
    await client.query('DROP TABLE tr');
  });

  it('postings: the bytes PostgreSQL writes for (term, w, rid), and they load back', async () => {
    // Prepare
    await client.query(
      'CREATE TABLE p (term int4 NOT NULL, w float4 NOT NULL, rid bigint NOT NULL)',
    );
    const rows = {
      term: [7, 7, 999_999_999],
      w: [Math.fround(1.7), 0.25, 3],
      rid: [1, 2 ** 33 + 5, 42],
    };
    await client.query(
      'INSERT INTO p SELECT term, w, rid FROM unnest($1::int4[], $2::float4[], $3::int8[]) WITH ORDINALITY AS u(term, w, rid, o) ORDER BY o',
      [rows.term, rows.w, rows.rid.map(String)],
    );
    const exported = await client.db.query(`COPY p TO '/dev/blob' WITH (FORMAT binary)`);
    const expected = new Uint8Array(await (exported.blob as Blob).arrayBuffer());
    await client.query('TRUNCATE p');
    // Act
    const encoded = encodePostings(rows);
    const loaded = await client.copyFrom?.('p', ['term', 'w', 'rid'], encoded);
    // Assert
    expect(Buffer.from(encoded).toString('hex')).toBe(Buffer.from(expected).toString('hex'));
    expect(loaded).toBe(3);
    const back = await client.query<{ term: number; w: number; rid: string }>(
      'SELECT term, w::float8 AS w, rid::text AS rid FROM p ORDER BY rid',
    );
    expect(back.rows).toEqual([
      { term: 7, w: Math.fround(1.7), rid: '1' },
      { term: 999_999_999, w: 3, rid: '42' },
      { term: 7, w: 0.25, rid: String(2 ** 33 + 5) },
    ]);
    expect(() => encodePostings({ term: [1], w: [1, 2], rid: [1] })).toThrow(RangeError);
    await client.query('DROP TABLE p');
  });
});
