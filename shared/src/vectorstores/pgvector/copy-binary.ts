/**
 * Encoder for PostgreSQL's binary COPY format, for the chunk table's row shape. Binary COPY skips the text
 * parsing of every float (about 90 % of a text COPY's cost for 384-dimension vectors on PGlite) and of the
 * JavaScript array-literal serialization that a multi-row INSERT needs.
 *
 * Field encodings are the types' binary send/receive formats: text as UTF-8, int4 big-endian, jsonb as
 * version byte 1 + JSON text, pgvector `vector` as int16 dim + int16 0 + float4[], and `sparsevec` as int32 dim
 * + int32 nnz + int32 0 + int32[] 0-based indices + float4[] values, int8 big-endian. Also the keyword index's postings
 * rows. Pure and synchronous.
 */

/**
 * One row of the chunk table, in column order: id, document_id, sequence_number, content, metadata, embedding, bm25,
 * token_count, version (and rid, given apart: see {@link encodeChunkRowsWithRids}).
 */
export interface ChunkRow {
  id: string;
  documentId: string;
  sequenceNumber: number;
  content: string;
  /** JSON text of the metadata object. */
  metadataJson: string;
  embedding: readonly number[];
  /** Sparse BM25 weights: 1-based term ids ascending (as in the text format), non-zero finite values. */
  bm25Indices: readonly number[];
  bm25Values: readonly number[];
  /** Declared dimension of the sparsevec column. */
  bm25Dim: number;
  tokenCount: number;
  /** Staged-write version (`''` for a direct write). */
  version: string;
}

const SIGNATURE = [0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00];
const FIELDS = 9;
const encoder = new TextEncoder();

/**
 * Encodes rows as one binary COPY stream (header, tuples, trailer).
 * @throws RangeError for a vector longer than 16,000 or mismatched sparse arrays
 */
export function encodeChunkRows(rows: readonly ChunkRow[]): Uint8Array {
  return encodeRows(rows, undefined);
}

/**
 * Encodes rows as {@link encodeChunkRows} does with a tenth column, the row id (int8), written later by `setRids`
 * (once the ids are known: the rest of the stream can be encoded before).
 * @throws RangeError as encodeChunkRows; `setRids` for a count other than the rows' or an id not a safe integer ≥ 0
 */
export function encodeChunkRowsWithRids(rows: readonly ChunkRow[]): {
  bytes: Uint8Array;
  setRids(rids: ArrayLike<number>): void;
} {
  const offsets: number[] = [];
  const bytes = encodeRows(rows, offsets);
  const view = new DataView(bytes.buffer);
  return {
    bytes,
    setRids(rids) {
      if (rids.length !== offsets.length) {
        throw new RangeError(`${rids.length} row ids for ${offsets.length} rows`);
      }
      offsets.forEach((o, i) => {
        setInt8Field(view, o, rids[i] as number);
      });
    },
  };
}

/** Writes a safe integer ≥ 0 as int8 (big-endian) at `o`. */
function setInt8Field(view: DataView, o: number, v: number): void {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`row id ${v} is not a safe integer`);
  view.setUint32(o, Math.floor(v / 2 ** 32));
  view.setUint32(o + 4, v % 2 ** 32);
}

/** The chunk rows' stream; with `ridOffsets`, a tenth int8 column left 0, its byte offsets pushed there. */
function encodeRows(rows: readonly ChunkRow[], ridOffsets: number[] | undefined): Uint8Array {
  const withRid = ridOffsets !== undefined;
  const fields = withRid ? FIELDS + 1 : FIELDS;
  const texts = rows.map((r) => ({
    id: encoder.encode(r.id),
    doc: encoder.encode(r.documentId),
    content: encoder.encode(r.content),
    meta: encoder.encode(r.metadataJson),
    version: encoder.encode(r.version),
  }));
  let size = SIGNATURE.length + 8 + 2;
  rows.forEach((r, i) => {
    const t = texts[i] as (typeof texts)[number];
    if (r.embedding.length > 16_000) throw new RangeError('vector longer than 16,000 dimensions');
    if (r.bm25Indices.length !== r.bm25Values.length)
      throw new RangeError('sparse indices and values differ in length');
    size += 2 + fields * 4 + (withRid ? 8 : 0);
    size +=
      t.id.length + t.doc.length + 4 + t.content.length + 1 + t.meta.length + t.version.length;
    size += 4 + 4 * r.embedding.length;
    size += 12 + 8 * r.bm25Indices.length;
    size += 4;
  });
  const buf = new Uint8Array(size);
  const view = new DataView(buf.buffer);
  let o = 0;
  buf.set(SIGNATURE, o);
  o += SIGNATURE.length;
  view.setInt32(o, 0); // flags
  view.setInt32(o + 4, 0); // header extension length
  o += 8;
  const bytes = (b: Uint8Array, prefix?: number) => {
    view.setInt32(o, b.length + (prefix === undefined ? 0 : 1));
    o += 4;
    if (prefix !== undefined) buf[o++] = prefix;
    buf.set(b, o);
    o += b.length;
  };
  const int4 = (v: number) => {
    view.setInt32(o, 4);
    view.setInt32(o + 4, v);
    o += 8;
  };
  rows.forEach((r, i) => {
    const t = texts[i] as (typeof texts)[number];
    view.setInt16(o, fields);
    o += 2;
    bytes(t.id);
    bytes(t.doc);
    int4(r.sequenceNumber);
    bytes(t.content);
    bytes(t.meta, 1); // jsonb version 1
    const dim = r.embedding.length;
    view.setInt32(o, 4 + 4 * dim);
    view.setInt16(o + 4, dim);
    view.setInt16(o + 6, 0);
    o += 8;
    for (const x of r.embedding) {
      view.setFloat32(o, x);
      o += 4;
    }
    const nnz = r.bm25Indices.length;
    view.setInt32(o, 12 + 8 * nnz);
    view.setInt32(o + 4, r.bm25Dim);
    view.setInt32(o + 8, nnz);
    view.setInt32(o + 12, 0);
    o += 16;
    for (const index of r.bm25Indices) {
      view.setInt32(o, index - 1); // the binary format is 0-based
      o += 4;
    }
    for (const v of r.bm25Values) {
      view.setFloat32(o, v);
      o += 4;
    }
    int4(r.tokenCount);
    bytes(t.version);
    if (ridOffsets !== undefined) {
      view.setInt32(o, 8);
      ridOffsets.push(o + 4);
      o += 12;
    }
  });
  view.setInt16(o, -1); // trailer
  return buf;
}

/** Postings `(term int4, w float4, rid int8)`, one per entry of the three columns. */
export interface PostingRows {
  term: ArrayLike<number>;
  w: ArrayLike<number>;
  rid: ArrayLike<number>;
}

/**
 * Encodes postings as one binary COPY stream, in the order given.
 * @throws RangeError when the columns differ in length or a rid is not a safe integer ≥ 0
 */
export function encodePostings(rows: PostingRows): Uint8Array {
  const count = rows.term.length;
  if (rows.w.length !== count || rows.rid.length !== count) {
    throw new RangeError('columns differ in length');
  }
  const buf = new Uint8Array(SIGNATURE.length + 8 + count * 30 + 2);
  const view = new DataView(buf.buffer);
  buf.set(SIGNATURE, 0);
  let o = SIGNATURE.length + 8;
  for (let i = 0; i < count; i++) {
    view.setInt16(o, 3);
    view.setInt32(o + 2, 4);
    view.setInt32(o + 6, rows.term[i] as number);
    view.setInt32(o + 10, 4);
    view.setFloat32(o + 14, rows.w[i] as number);
    view.setInt32(o + 18, 8);
    setInt8Field(view, o + 22, rows.rid[i] as number);
    o += 30;
  }
  view.setInt16(o, -1);
  return buf;
}

/**
 * Encodes rows of two int4 columns as one binary COPY stream.
 * @throws RangeError when the columns differ in length
 */
export function encodeInt4Pairs(first: readonly number[], second: readonly number[]): Uint8Array {
  if (first.length !== second.length) throw new RangeError('columns differ in length');
  const buf = new Uint8Array(SIGNATURE.length + 8 + first.length * 18 + 2);
  const view = new DataView(buf.buffer);
  buf.set(SIGNATURE, 0);
  let o = SIGNATURE.length + 8;
  for (let i = 0; i < first.length; i++) {
    view.setInt16(o, 2);
    view.setInt32(o + 2, 4);
    view.setInt32(o + 6, first[i] as number);
    view.setInt32(o + 10, 4);
    view.setInt32(o + 14, second[i] as number);
    o += 18;
  }
  view.setInt16(o, -1);
  return buf;
}
