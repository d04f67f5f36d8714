import {
  DataType,
  FunctionType,
  MilvusClient,
  RRFRanker,
  WeightedRanker,
} from '@zilliz/milvus2-sdk-node';
import type { AI4RAGChunk, ChunkMetadata } from '../../chunking/types.js';
import type { Embedder } from '../../embeddings/types.js';
import { Ai4ragError, NotFoundError } from '../../errors.js';
import { normalizedFuse } from '../../retrieval/fusion.js';
import { validateSearchParams } from '../../retrieval/search-params.js';
import { checkDocumentRecord, VectorStoreConfigError, VectorStoreError } from '../errors.js';
import { resolveCollectionName } from '../naming.js';
import type {
  CollectionStats,
  DistanceMetric,
  DocumentCommit,
  DocumentRecord,
  EmbeddedChunk,
  MetadataFilter,
  SearchHit,
  SearchParams,
  VectorStore,
} from '../types.js';
import type { MilvusConfig } from './config.js';
import { andExpr, metadataFilterExpr, milvusList, milvusLiteral } from './filter-expr.js';

/** Rows per upsert RPC (ai4rag's Milvus batch size). */
export const MILVUS_UPSERT_BATCH_SIZE = 2048;
/** Texts per embedding call. */
export const MILVUS_EMBED_BATCH_SIZE = 1024;
/** Milvus' query result window (offset + limit); reads that could exceed it are refused. */
export const MILVUS_QUERY_WINDOW = 16_384;
/** Suffix of the document-record collection. */
export const DOCS_SUFFIX = '_docs';

const METRIC: Partial<Record<DistanceMetric, string>> = {
  cosine: 'COSINE',
  l2: 'L2',
  inner_product: 'IP',
};
const CHUNK_FIELDS = ['chunk_id', 'content', 'chunk_content'];
const DOC_FIELDS = [
  'document_id',
  'content_hash',
  'chunk_count',
  'updated_at',
  'metadata',
  'has_metadata',
];
const MAX_CONTENT_BYTES = 65_535;
const MAX_ID_LENGTH = 128;
const ID_LIST_BATCH = 1000;
const STRONG = 'Strong';
/** How long opening a store waits for Milvus to load a collection. */
export const LOAD_TIMEOUT_MS = 120_000;

/** Options of {@link MilvusVectorStore.create}. */
export interface MilvusVectorStoreOptions {
  /** Connection settings; ignored when `client` is given. */
  config?: MilvusConfig;
  /** An already connected client (wins over `config`; not closed by the store unless `ownsClient`). */
  client?: MilvusClient;
  embedder: Embedder;
  /** Resolved with `resolveCollectionName` (must start with `ai4rag`; generated when absent). */
  collectionName?: string;
  /** @default 'cosine' (l1 is not supported by Milvus) */
  distance?: DistanceMetric;
  /** Create the collections when missing; false → NotFoundError. @default true */
  createIfMissing?: boolean;
  /** `close()` closes the client. @default true when the store built it from `config`, else false */
  ownsClient?: boolean;
  /** Candidates taken from each side of a hybrid search (at least k). @default 100 */
  hybridCandidates?: number;
}

/** What the store records in the chunk collection's description. */
interface CollectionMeta {
  ai4rag: 'chunks';
  embedding_model: string;
  distance: DistanceMetric;
}

interface ChunkRow {
  chunk_id: string;
  content: string;
  chunk_content: ChunkMetadata;
  score?: number;
}

interface DocRow {
  document_id: string;
  content_hash: string;
  chunk_count: number | string;
  updated_at: string;
  metadata: Record<string, unknown> | null;
  has_metadata: boolean;
}

interface Status {
  error_code?: string | number;
  code?: number;
  reason?: string;
}

// biome-ignore lint/suspicious/noExplicitAny: the SDK's request types are wide unions; rows are checked here
type Loose = any;

function statusOf(res: unknown): Status | undefined {
  const r = res as { status?: Status; error_code?: unknown } | null;
  if (r?.status !== undefined) return r.status;
  if (r !== null && typeof r === 'object' && 'error_code' in r) return r as Status;
  return undefined;
}

/** @throws {VectorStoreError} when a Milvus response carries a failure status. */
function check<T>(operation: string, res: T): T {
  const s = statusOf(res);
  if (s !== undefined && s.error_code !== 'Success' && s.error_code !== 0) {
    throw new VectorStoreError(
      `Milvus ${operation} failed: ${String(s.reason || s.error_code).slice(0, 300)}`,
    );
  }
  return res;
}

function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

function chunked<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function toDocumentRecord(row: DocRow): DocumentRecord {
  return {
    documentId: row.document_id,
    contentHash: row.content_hash,
    chunkCount: Number(row.chunk_count),
    updatedAt: new Date(row.updated_at).toISOString(),
    ...(row.has_metadata && row.metadata !== null ? { metadata: row.metadata } : {}),
  };
}

function toHit(row: ChunkRow, score?: number): SearchHit {
  return {
    id: row.chunk_id,
    text: row.content,
    metadata: row.chunk_content,
    ...(score !== undefined ? { score } : {}),
  };
}

/** Search results of one query (the SDK nests them per query when several are sent). */
function firstQuery(results: unknown): ChunkRow[] {
  const list = (results ?? []) as unknown[];
  return (Array.isArray(list[0]) ? list[0] : list) as ChunkRow[];
}

/**
 * Milvus / Zilliz Cloud {@link VectorStore}. Chunks live in one collection (dense `vector` plus a `sparse` field
 * computed by Milvus' BM25 function over `content`); document records in `<name>_docs`. Hybrid search is fused
 * on the server (RRFRanker / WeightedRanker); `normalized` has no Milvus ranker and is fused client-side with
 * {@link normalizedFuse}. Every read uses Strong consistency. See `shared/src/vectorstores/milvus/README.md`.
 */
export class MilvusVectorStore implements VectorStore {
  readonly collectionName: string;
  readonly docsCollection: string;
  readonly distance: DistanceMetric;
  readonly dimension: number;
  private readonly client: MilvusClient;
  private readonly embedder: Embedder;
  private readonly ownsClient: boolean;
  private readonly hybridCandidates: number;
  private closed = false;

  private constructor(
    client: MilvusClient,
    options: MilvusVectorStoreOptions,
    name: string,
    ownsClient: boolean,
  ) {
    this.client = client;
    this.embedder = options.embedder;
    this.collectionName = name;
    this.docsCollection = `${name}${DOCS_SUFFIX}`;
    this.distance = options.distance ?? 'cosine';
    this.dimension = options.embedder.dimension;
    this.ownsClient = ownsClient;
    this.hybridCandidates = options.hybridCandidates ?? 100;
  }

  /**
   * Opens (creating when needed) a collection and loads it. Reopening checks the recorded dimension, distance
   * and embedding model and refuses a mismatch rather than mixing vectors.
   * @throws {CollectionNameError} for a name failing the `ai4rag` guard.
   * @throws {VectorStoreConfigError} for bad options (no client or config, l1 distance, bad dimension).
   * @throws {NotFoundError} when the collection is missing and `createIfMissing` is false.
   * @throws {VectorStoreError} for an incompatible existing collection or a Milvus failure.
   * @example
   * const store = await MilvusVectorStore.create({
   *   config: milvusConfigFromEnv(env), embedder, collectionName: 'ai4rag_kb',
   * });
   */
  static async create(options: MilvusVectorStoreOptions): Promise<MilvusVectorStore> {
    const name = resolveCollectionName(options.collectionName);
    const distance = options.distance ?? 'cosine';
    if (METRIC[distance] === undefined) {
      throw new VectorStoreConfigError(
        `distance '${String(distance)}' is not supported by Milvus (use cosine, l2 or inner_product)`,
      );
    }
    const dim = options.embedder?.dimension;
    if (!Number.isInteger(dim) || dim < 2 || dim > 32_768) {
      throw new VectorStoreConfigError(
        `embedder.dimension must be an integer in [2, 32768] for Milvus, got ${String(dim)}`,
      );
    }
    const candidates = options.hybridCandidates ?? 100;
    if (!Number.isInteger(candidates) || candidates < 1 || candidates > 16_384) {
      throw new VectorStoreConfigError('hybridCandidates must be an integer in [1, 16384]');
    }
    let client = options.client;
    let owns = options.ownsClient ?? false;
    if (client === undefined) {
      const config = options.config;
      if (config === undefined) {
        throw new VectorStoreConfigError('MilvusVectorStore needs a config or a client');
      }
      const https = config.uri.startsWith('https://');
      client = new MilvusClient({
        address: config.uri,
        ...(config.token ? { token: config.token } : {}),
        ssl: https,
        ...(config.serverCert ? { tls: { rootCert: Buffer.from(config.serverCert) } } : {}),
        logLevel: 'error',
      });
      owns = options.ownsClient ?? true;
    }
    const store = new MilvusVectorStore(client, { ...options, distance }, name, owns);
    try {
      await store.run('open collection', () => store.init(options.createIfMissing ?? true));
    } catch (error: unknown) {
      if (owns) await client.closeConnection().catch(() => undefined);
      throw error;
    }
    return store;
  }

  private async init(createIfMissing: boolean): Promise<void> {
    const c = this.client;
    const exists = check(
      'hasCollection',
      await c.hasCollection({ collection_name: this.collectionName }),
    );
    if (!exists.value) {
      if (!createIfMissing) {
        throw new NotFoundError(
          `collection ${this.collectionName} does not exist (ingest documents into it first)`,
        );
      }
      await this.createChunkCollection();
    }
    const described = check(
      'describeCollection',
      await c.describeCollection({ collection_name: this.collectionName }),
    );
    this.checkCompatible(described.schema as Loose);
    const docsExist = check(
      'hasCollection',
      await c.hasCollection({ collection_name: this.docsCollection }),
    );
    if (!docsExist.value) await this.createDocsCollection();
    await this.ensureLoaded(this.collectionName);
    await this.ensureLoaded(this.docsCollection);
  }

  /**
   * Loads a collection unless it is loaded, polling the load state with a short backoff (the SDK's own
   * `loadCollection` sleeps 400 ms after every poll, even when loading is instant).
   * @throws {VectorStoreError} when loading does not finish within {@link LOAD_TIMEOUT_MS}.
   */
  private async ensureLoaded(collection: string): Promise<void> {
    const state = async (): Promise<string> =>
      String(
        check('getLoadState', await this.client.getLoadState({ collection_name: collection }))
          .state,
      );
    if ((await state()) === 'LoadStateLoaded') return;
    check('loadCollection', await this.client.loadCollectionAsync({ collection_name: collection }));
    const deadline = Date.now() + LOAD_TIMEOUT_MS;
    for (let wait = 10; (await state()) !== 'LoadStateLoaded'; wait = Math.min(wait * 2, 1000)) {
      if (Date.now() > deadline) {
        throw new VectorStoreError(
          `collection ${collection} did not load within ${LOAD_TIMEOUT_MS} ms`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  private checkCompatible(schema: {
    description?: string;
    fields?: { name: string; type_params?: { key: string; value: unknown }[] }[];
  }): void {
    let meta: Partial<CollectionMeta> = {};
    try {
      meta = JSON.parse(schema.description ?? '') as Partial<CollectionMeta>;
    } catch {
      meta = {};
    }
    const vector = schema.fields?.find((f) => f.name === 'vector');
    const sparse = schema.fields?.find((f) => f.name === 'sparse');
    if (meta.ai4rag !== 'chunks' || vector === undefined || sparse === undefined) {
      throw new VectorStoreError(
        `collection ${this.collectionName} exists but was not created by this store (no ai4rag schema)`,
      );
    }
    const dim = Number(vector.type_params?.find((p) => p.key === 'dim')?.value);
    if (dim !== this.dimension) {
      throw new VectorStoreError(
        `collection ${this.collectionName} holds ${dim}-dimensional vectors; the embedder produces ${this.dimension}`,
      );
    }
    if (meta.distance !== this.distance) {
      throw new VectorStoreError(
        `collection ${this.collectionName} uses distance ${String(meta.distance)}, not ${this.distance}`,
      );
    }
    if (meta.embedding_model !== this.embedder.modelId) {
      throw new VectorStoreError(
        `collection ${this.collectionName} was embedded with ${String(meta.embedding_model)}, not ${this.embedder.modelId}`,
      );
    }
  }

  /** Runs a create call; another process creating the same collection first is not an error. */
  private async createIgnoringRace(create: () => Promise<unknown>): Promise<boolean> {
    try {
      const res = await create();
      const s = statusOf(res);
      if (s?.error_code !== 'Success' && /already exist/i.test(String(s?.reason))) return false;
      check('createCollection', res);
      return true;
    } catch (error: unknown) {
      const reason = (error as { reason?: unknown; message?: unknown } | null)?.reason;
      if (/already exist/i.test(String(reason ?? (error as Error)?.message))) return false;
      throw error;
    }
  }

  private async createChunkCollection(): Promise<void> {
    const meta: CollectionMeta = {
      ai4rag: 'chunks',
      embedding_model: this.embedder.modelId,
      distance: this.distance,
    };
    const created = await this.createIgnoringRace(() =>
      this.client.createCollection({
        collection_name: this.collectionName,
        description: JSON.stringify(meta),
        consistency_level: STRONG,
        fields: [
          {
            name: 'chunk_id',
            data_type: DataType.VarChar,
            is_primary_key: true,
            max_length: MAX_ID_LENGTH,
          },
          {
            name: 'content',
            data_type: DataType.VarChar,
            max_length: MAX_CONTENT_BYTES,
            enable_analyzer: true,
          },
          { name: 'document_id', data_type: DataType.VarChar, max_length: 512 },
          { name: 'sequence_number', data_type: DataType.Int64 },
          { name: 'chunk_content', data_type: DataType.JSON },
          { name: 'vector', data_type: DataType.FloatVector, dim: this.dimension },
          { name: 'sparse', data_type: DataType.SparseFloatVector },
        ],
        functions: [
          {
            name: 'content_bm25',
            type: FunctionType.BM25,
            input_field_names: ['content'],
            output_field_names: ['sparse'],
            params: {},
          },
        ],
      } as Loose),
    );
    if (!created) return;
    check(
      'createIndex',
      await this.client.createIndex({
        collection_name: this.collectionName,
        field_name: 'vector',
        index_type: 'FLAT',
        metric_type: METRIC[this.distance] as string,
      }),
    );
    check(
      'createIndex',
      await this.client.createIndex({
        collection_name: this.collectionName,
        field_name: 'sparse',
        index_type: 'SPARSE_INVERTED_INDEX',
        metric_type: 'BM25',
      }),
    );
  }

  private async createDocsCollection(): Promise<void> {
    const created = await this.createIgnoringRace(() =>
      this.client.createCollection({
        collection_name: this.docsCollection,
        description: JSON.stringify({ ai4rag: 'documents', collection: this.collectionName }),
        consistency_level: STRONG,
        fields: [
          {
            name: 'document_id',
            data_type: DataType.VarChar,
            is_primary_key: true,
            max_length: 512,
          },
          { name: 'content_hash', data_type: DataType.VarChar, max_length: 256 },
          { name: 'chunk_count', data_type: DataType.Int64 },
          { name: 'updated_at', data_type: DataType.VarChar, max_length: 64 },
          { name: 'metadata', data_type: DataType.JSON },
          { name: 'has_metadata', data_type: DataType.Bool },
          // Milvus requires a vector field in every collection.
          { name: 'dummy', data_type: DataType.FloatVector, dim: 2 },
        ],
      } as Loose),
    );
    if (!created) return;
    check(
      'createIndex',
      await this.client.createIndex({
        collection_name: this.docsCollection,
        field_name: 'dummy',
        index_type: 'FLAT',
        metric_type: 'L2',
      }),
    );
  }

  /** Wraps foreign errors; the message names the operation and the collection. */
  private async run<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error: unknown) {
      if (error instanceof Ai4ragError) throw error;
      // The SDK rejects with Error objects or with raw status objects ({ error_code, reason }).
      const reason = (error as { reason?: unknown; message?: unknown } | null)?.reason;
      const detail = typeof reason === 'string' && reason ? `: ${reason.slice(0, 300)}` : '';
      throw new VectorStoreError(
        `${operation} failed on Milvus collection ${this.collectionName}${detail}`,
        { cause: error },
      );
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new VectorStoreError(`store for ${this.collectionName} is closed`);
  }

  /**
   * Upserts chunks whose vectors are already computed, in batches of {@link MILVUS_UPSERT_BATCH_SIZE}; duplicate
   * ids within the call: the first wins.
   * @returns the number of distinct chunks stored.
   * @throws {VectorStoreError} for a malformed chunk (id, text size, vector) or a Milvus failure.
   */
  async upsert(records: EmbeddedChunk[]): Promise<number> {
    this.assertOpen();
    const seen = new Set<string>();
    const rows: Record<string, unknown>[] = [];
    for (const { chunk, vector } of records) {
      if (
        typeof chunk?.id !== 'string' ||
        chunk.id.length === 0 ||
        chunk.id.length > MAX_ID_LENGTH
      ) {
        throw new VectorStoreError(
          `every chunk needs a string id of 1..${MAX_ID_LENGTH} characters`,
        );
      }
      if (seen.has(chunk.id)) continue;
      seen.add(chunk.id);
      if (typeof chunk.text !== 'string')
        throw new VectorStoreError(`chunk ${chunk.id} has no text`);
      if (utf8Length(chunk.text) > MAX_CONTENT_BYTES) {
        throw new VectorStoreError(
          `chunk ${chunk.id} is longer than Milvus' ${MAX_CONTENT_BYTES}-byte VarChar limit`,
        );
      }
      if (
        !Array.isArray(vector) ||
        vector.length !== this.dimension ||
        !vector.every(Number.isFinite)
      ) {
        throw new VectorStoreError(
          `chunk ${chunk.id}: vector must hold ${this.dimension} finite numbers`,
        );
      }
      const meta = chunk.metadata ?? ({} as ChunkMetadata);
      const seq = meta.sequence_number;
      rows.push({
        chunk_id: chunk.id,
        content: chunk.text,
        document_id: typeof meta.document_id === 'string' ? meta.document_id : '',
        sequence_number: Number.isSafeInteger(seq) ? seq : 0,
        chunk_content: meta,
        vector,
      });
    }
    for (const batch of chunked(rows, MILVUS_UPSERT_BATCH_SIZE)) {
      await this.run('upsert', async () =>
        check(
          'upsert',
          await this.client.upsert({ collection_name: this.collectionName, data: batch as Loose }),
        ),
      );
    }
    return rows.length;
  }

  /**
   * Embeds (≤ {@link MILVUS_EMBED_BATCH_SIZE} texts per call) and upserts chunks; duplicate ids: first wins.
   * @returns the number of distinct chunks stored.
   */
  async addChunks(chunks: AI4RAGChunk[]): Promise<number> {
    this.assertOpen();
    const seen = new Set<string>();
    const unique: AI4RAGChunk[] = [];
    for (const c of chunks) {
      if (seen.has(c.id)) continue;
      seen.add(c.id);
      unique.push(c);
    }
    let stored = 0;
    for (const slice of chunked(unique, MILVUS_UPSERT_BATCH_SIZE)) {
      const records: EmbeddedChunk[] = [];
      for (const batch of chunked(slice, MILVUS_EMBED_BATCH_SIZE)) {
        const vectors = await this.embedder.embedDocuments(batch.map((c) => c.text));
        if (vectors.length !== batch.length) {
          throw new VectorStoreError(
            `embedder returned ${vectors.length} vectors for ${batch.length} texts`,
          );
        }
        batch.forEach((chunk, j) => {
          records.push({ chunk, vector: vectors[j] ?? [] });
        });
      }
      stored += await this.upsert(records);
    }
    return stored;
  }

  /** Higher-is-better score of a dense hit: Milvus returns squared distances for L2. */
  private denseScore(raw: number): number {
    return this.distance === 'l2' ? 1 / (1 + Math.sqrt(Math.max(0, raw))) : raw;
  }

  /**
   * Vector or hybrid (dense + BM25 full-text) search. `rrf` and `weighted` are fused by Milvus
   * (RRFRanker(k), WeightedRanker([α, 1 − α]), dense first); `normalized` fetches both lists and fuses them
   * client-side. Parameters are validated before any I/O.
   * @throws {SearchParamsError} for invalid parameters.
   * @throws {VectorStoreError} for a Milvus failure.
   */
  async search(query: string, params: SearchParams): Promise<SearchHit[]> {
    const p = validateSearchParams(params);
    this.assertOpen();
    if (typeof query !== 'string') throw new VectorStoreError('query must be a string');
    const qvec = await this.embedder.embedQuery(query);
    if (qvec.length !== this.dimension || !qvec.every(Number.isFinite)) {
      throw new VectorStoreError(`query vector must hold ${this.dimension} finite numbers`);
    }
    const filter = metadataFilterExpr(p.filter);
    const score = (s: number | undefined): number | undefined =>
      p.includeScores ? (s ?? 0) : undefined;
    if (p.searchMode === 'vector') {
      const rows = await this.annSearch('vector', qvec, p.k, filter);
      return rows.map((r) => toHit(r, score(this.denseScore(Number(r.score)))));
    }
    const n = Math.max(this.hybridCandidates, p.k);
    if (p.rankerStrategy === 'normalized') {
      const [dense, sparse] = [
        await this.annSearch('vector', qvec, n, filter),
        await this.annSearch('sparse', query, n, filter),
      ];
      const byId = new Map<string, ChunkRow>();
      for (const r of [...dense, ...sparse]) if (!byId.has(r.chunk_id)) byId.set(r.chunk_id, r);
      const fused = normalizedFuse([
        dense.map((r) => ({ id: r.chunk_id, score: this.denseScore(Number(r.score)) })),
        sparse.map((r) => ({ id: r.chunk_id, score: Number(r.score) })),
      ]).slice(0, p.k);
      return fused.map((f) => toHit(byId.get(f.id) as ChunkRow, score(f.score)));
    }
    const rerank =
      p.rankerStrategy === 'rrf'
        ? RRFRanker(p.rankerK)
        : WeightedRanker([p.rankerAlpha, 1 - p.rankerAlpha]);
    const res = await this.run('hybrid search', async () =>
      check(
        'hybridSearch',
        await this.client.hybridSearch({
          collection_name: this.collectionName,
          data: [
            { data: [qvec], anns_field: 'vector', limit: n, ...(filter ? { expr: filter } : {}) },
            { data: [query], anns_field: 'sparse', limit: n, ...(filter ? { expr: filter } : {}) },
          ],
          rerank,
          limit: p.k,
          ...(filter ? { filter } : {}),
          output_fields: CHUNK_FIELDS,
          consistency_level: STRONG,
        } as Loose),
      ),
    );
    return firstQuery(res.results).map((r) => toHit(r, score(Number(r.score))));
  }

  private async annSearch(
    field: 'vector' | 'sparse',
    data: number[] | string,
    limit: number,
    filter: string,
  ): Promise<ChunkRow[]> {
    const res = await this.run(`${field} search`, async () =>
      check(
        'search',
        await this.client.search({
          collection_name: this.collectionName,
          data: [data],
          anns_field: field,
          limit,
          ...(filter ? { filter } : {}),
          output_fields: CHUNK_FIELDS,
          consistency_level: STRONG,
        } as Loose),
      ),
    );
    return firstQuery(res.results);
  }

  private async query<T>(
    collection: string,
    filter: string,
    outputFields: string[],
    limit?: number,
  ): Promise<T[]> {
    const res = await this.run('query', async () =>
      check(
        'query',
        await this.client.query({
          collection_name: collection,
          filter,
          output_fields: outputFields,
          consistency_level: STRONG,
          ...(limit !== undefined ? { limit } : {}),
        } as Loose),
      ),
    );
    return (res.data ?? []) as T[];
  }

  private async count(collection: string): Promise<number> {
    const rows = await this.query<Record<string, unknown>>(collection, '', ['count(*)']);
    return Number(rows[0]?.['count(*)'] ?? 0);
  }

  /**
   * Chunks of one document with sequence_number in [from, to], ordered by sequence_number (window retrieval).
   * @throws {VectorStoreError} for non-integer bounds, a window wider than Milvus' query window, or a failure.
   */
  async getChunksBySequence(documentId: string, from: number, to: number): Promise<SearchHit[]> {
    this.assertOpen();
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to)) {
      throw new VectorStoreError('sequence bounds must be integers');
    }
    if (to < from) return [];
    if (to - from + 1 > MILVUS_QUERY_WINDOW) {
      throw new VectorStoreError(
        `a sequence window may span at most ${MILVUS_QUERY_WINDOW} chunks`,
      );
    }
    const rows = await this.query<ChunkRow & { sequence_number: number | string }>(
      this.collectionName,
      `document_id == ${milvusLiteral(documentId)} and sequence_number >= ${milvusLiteral(from)} and sequence_number <= ${milvusLiteral(to)}`,
      [...CHUNK_FIELDS, 'sequence_number'],
      to - from + 1,
    );
    return rows
      .sort(
        (a, b) =>
          Number(a.sequence_number) - Number(b.sequence_number) ||
          (a.chunk_id < b.chunk_id ? -1 : a.chunk_id > b.chunk_id ? 1 : 0),
      )
      .map((r) => toHit(r));
  }

  private async deleteWhere(collection: string, filter: string): Promise<number> {
    const res = await this.run('delete', async () =>
      check('delete', await this.client.delete({ collection_name: collection, filter } as Loose)),
    );
    return Number(res.delete_cnt ?? 0);
  }

  /** `document_id == x`, and `chunk_id not in keepIds` when given and non-empty. */
  private staleExpr(documentId: string, keepIds?: readonly string[]): string {
    const doc = `document_id == ${milvusLiteral(documentId)}`;
    return keepIds !== undefined && keepIds.length > 0
      ? andExpr(doc, `chunk_id not in ${milvusList(keepIds)}`)
      : doc;
  }

  /**
   * Deletes a document's chunks except `keepIds`; without `keepIds` also removes its document record.
   * @returns the number of chunks deleted.
   */
  async deleteByDocument(
    documentId: string,
    options: { keepIds?: string[] } = {},
  ): Promise<number> {
    this.assertOpen();
    const deleted = await this.deleteWhere(
      this.collectionName,
      this.staleExpr(documentId, options.keepIds),
    );
    if (options.keepIds === undefined) {
      await this.deleteWhere(this.docsCollection, `document_id == ${milvusLiteral(documentId)}`);
    }
    return deleted;
  }

  /**
   * Deletes the chunks whose metadata matches every key of a non-empty filter (typed equality: 1 ≠ '1').
   * Document records are left alone.
   * @throws {VectorStoreConfigError} for an empty filter or a bad key/value.
   */
  async deleteByFilter(filter: MetadataFilter): Promise<number> {
    const expr = metadataFilterExpr(filter, { nonEmpty: true });
    this.assertOpen();
    return this.deleteWhere(this.collectionName, expr);
  }

  /** Creates or replaces a document record. */
  async putDocument(record: DocumentRecord): Promise<void> {
    this.assertOpen();
    checkDocumentRecord(record);
    await this.writeDocuments([record]);
  }

  private async writeDocuments(records: readonly DocumentRecord[]): Promise<void> {
    const rows = records.map((r) => ({
      document_id: r.documentId,
      content_hash: r.contentHash,
      chunk_count: r.chunkCount,
      updated_at: r.updatedAt,
      metadata: r.metadata ?? {},
      has_metadata: r.metadata !== undefined,
      dummy: [0, 0],
    }));
    for (const batch of chunked(rows, MILVUS_UPSERT_BATCH_SIZE)) {
      await this.run('put documents', async () =>
        check(
          'upsert',
          await this.client.upsert({ collection_name: this.docsCollection, data: batch }),
        ),
      );
    }
  }

  /**
   * Deletes the stale chunks of several documents (those not in their `keepIds`), then upserts their records.
   * Milvus has no transactions: a failure between the two steps leaves old records that the next ingestion
   * rewrites (the chunk deletes are idempotent).
   * @throws {VectorStoreError} when a document appears twice, for a bad record, or a Milvus failure.
   */
  async commitDocuments(entries: DocumentCommit[]): Promise<number> {
    this.assertOpen();
    if (entries.length === 0) return 0;
    const ids = new Set<string>();
    for (const e of entries) {
      checkDocumentRecord(e.record);
      if (ids.has(e.record.documentId)) {
        throw new VectorStoreError(`document ${e.record.documentId} appears twice in one commit`);
      }
      ids.add(e.record.documentId);
    }
    let deleted = 0;
    for (const e of entries) {
      deleted += await this.deleteWhere(
        this.collectionName,
        this.staleExpr(e.record.documentId, e.keepIds),
      );
    }
    await this.writeDocuments(entries.map((e) => e.record));
    return deleted;
  }

  async getDocuments(documentIds: string[]): Promise<Map<string, DocumentRecord>> {
    this.assertOpen();
    const out = new Map<string, DocumentRecord>();
    for (const batch of chunked([...new Set(documentIds)], ID_LIST_BATCH)) {
      const rows = await this.query<DocRow>(
        this.docsCollection,
        `document_id in ${milvusList(batch)}`,
        DOC_FIELDS,
      );
      for (const row of rows) out.set(row.document_id, toDocumentRecord(row));
    }
    return out;
  }

  async getDocument(documentId: string): Promise<DocumentRecord | undefined> {
    return (await this.getDocuments([documentId])).get(documentId);
  }

  /**
   * All document records, ordered by id.
   * @throws {VectorStoreError} when the collection holds more records than Milvus' query window.
   */
  async listDocuments(): Promise<DocumentRecord[]> {
    this.assertOpen();
    const rows = await this.query<DocRow>(
      this.docsCollection,
      'document_id != ""',
      DOC_FIELDS,
      MILVUS_QUERY_WINDOW,
    );
    if (rows.length >= MILVUS_QUERY_WINDOW) {
      throw new VectorStoreError(
        `collection ${this.collectionName} holds ${MILVUS_QUERY_WINDOW} or more documents; listing is limited to fewer`,
      );
    }
    return rows
      .map(toDocumentRecord)
      .sort((a, b) => (a.documentId < b.documentId ? -1 : a.documentId > b.documentId ? 1 : 0));
  }

  async stats(): Promise<CollectionStats> {
    this.assertOpen();
    return {
      collection: this.collectionName,
      documents: await this.count(this.docsCollection),
      chunks: await this.count(this.collectionName),
      dimension: this.dimension,
      distance: this.distance,
      embeddingModel: this.embedder.modelId,
      annIndex: true,
    };
  }

  /** Drops the chunk and document collections, then closes the store. */
  async drop(): Promise<void> {
    this.assertOpen();
    for (const name of [this.collectionName, this.docsCollection]) {
      await this.run('drop collection', async () =>
        check('dropCollection', await this.client.dropCollection({ collection_name: name })),
      );
    }
    await this.close();
  }

  /** Closes the store; the client too when the store owns it. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsClient) await this.client.closeConnection();
  }
}
