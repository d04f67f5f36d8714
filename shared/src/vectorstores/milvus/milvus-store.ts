import {
  DataType,
  FunctionType,
  MilvusClient,
  RRFRanker,
  WeightedRanker,
} from '@zilliz/milvus2-sdk-node';
import type { AI4RAGChunk, ChunkMetadata } from '../../chunking/types.js';
import type { Embedder } from '../../embeddings/types.js';
import { Ai4ragError, NotFoundError, ValidationError } from '../../errors.js';
import { normalizedFuse } from '../../retrieval/fusion.js';
import { validateSearchParams } from '../../retrieval/search-params.js';
import {
  checkDocumentRecord,
  checkListLimit,
  EmbeddingModelMismatchError,
  VectorStoreConfigError,
  VectorStoreError,
  WriteEndedError,
} from '../errors.js';
import { resolveCollectionName } from '../naming.js';
import {
  checkLease,
  checkVersion,
  compareSequencers,
  DEFAULT_LEASE_SECONDS,
  isDeadLocalOwner,
  localOwner,
  MAX_LEASE_SECONDS,
  newVersion,
} from '../staged.js';
import type {
  BeginWriteOptions,
  CollectionStats,
  CommitRefusal,
  DeleteDocumentOptions,
  DistanceMetric,
  DocumentCommit,
  DocumentRecord,
  EmbeddedChunk,
  IntegrityReport,
  ListDocumentsOptions,
  MetadataFilter,
  SearchHit,
  SearchParams,
  VectorStore,
  VersionedCommit,
  WriteOutcome,
} from '../types.js';
import type { MilvusConfig } from './config.js';
import {
  andExpr,
  filterNodeExpr,
  metadataFilterExpr,
  milvusList,
  milvusLiteral,
} from './filter-expr.js';

/** Rows per upsert RPC (ai4rag's Milvus batch size). */
export const MILVUS_UPSERT_BATCH_SIZE = 2048;
/** Texts per embedding call. */
export const MILVUS_EMBED_BATCH_SIZE = 1024;
/** Milvus' query result window (offset + limit); reads that could exceed it are refused. */
export const MILVUS_QUERY_WINDOW = 16_384;
/** Suffix of the document-record collection. */
export const DOCS_SUFFIX = '_docs';
/**
 * Layout version recorded in both collections' descriptions. 2: chunk primary key `pk` = `<version>|<chunk id>`
 * with a `version` field; the docs collection keyed by `key` holds records, tombstones and write leases.
 */
export const MILVUS_SCHEMA_VERSION = 2;
/** Rounds of re-searching with newly found invisible (document, version) pairs excluded. */
export const MAX_VISIBILITY_ROUNDS = 16;

const METRIC: Partial<Record<DistanceMetric, string>> = {
  cosine: 'COSINE',
  l2: 'L2',
  inner_product: 'IP',
};
const CHUNK_FIELDS = ['chunk_id', 'content', 'chunk_content', 'document_id', 'version'];
const DOC_FIELDS = [
  'key',
  'kind',
  'document_id',
  'content_hash',
  'chunk_count',
  'updated_at',
  'metadata',
  'has_metadata',
  'version',
  'sequencer',
  'deleted_at',
];
const WRITE_FIELDS = ['key', 'version', 'owner', 'expires_at', 'lease_ms', 'ended_at'];
const MAX_CONTENT_BYTES = 65_535;
/**
 * Milvus' limit on one JSON field value (`common.JSONMaxLength`, 65,536 bytes of the serialized JSON, UTF-8): a
 * longer value is refused at insert/upsert with "the length (n) of json field (f) exceeds max length (65536)".
 */
export const MILVUS_JSON_MAX_BYTES = 65_536;
const MAX_ID_LENGTH = 128;
const MAX_DOC_ID_LENGTH = 512;
const MAX_VERSION_LENGTH = 128;
const MAX_OWNER_LENGTH = 256;
const ID_LIST_BATCH = 1000;
/** Rows per page of a primary-key-ordered scan. */
const SCAN_PAGE = 4096;
const STRONG = 'Strong';
const SEQUENCER_RE = /^[0-9A-Fa-f]{1,128}$/;
/** How long opening a store waits for Milvus to load a collection. */
export const LOAD_TIMEOUT_MS = 120_000;

/** Kinds of rows in the docs collection. */
const KIND_DOC = 'doc';
const KIND_TOMBSTONE = 'tombstone';
const KIND_WRITE = 'write';

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
  schema: number;
}

interface ChunkRow {
  chunk_id: string;
  content: string;
  chunk_content: ChunkMetadata;
  document_id: string;
  version: string;
  score?: number;
}

/** A row of the docs collection: a document record (`doc`), a deletion (`tombstone`) or a lease (`write`). */
interface DocRow {
  key: string;
  kind: string;
  document_id: string;
  content_hash: string;
  chunk_count: number | string;
  updated_at: string;
  metadata: Record<string, unknown> | null;
  has_metadata: boolean;
  version: string;
  sequencer: string;
  deleted_at: number | string;
}

/** A staged write's lease. */
interface Lease {
  version: string;
  owner: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  leaseMs: number;
  /** When the write ended (finished, aborted or swept), epoch ms; 0 while it runs. */
  endedAt: number;
}

interface WriteRow {
  key: string;
  version: string;
  owner: string;
  expires_at: number | string;
  lease_ms: number | string;
  ended_at: number | string;
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

/**
 * Refuses the chunks whose metadata (the `chunk_content` JSON field) serializes, as the SDK sends it
 * (`JSON.stringify`, UTF-8), to more than {@link MILVUS_JSON_MAX_BYTES}: a real Milvus would refuse the whole
 * batch mid-ingest. Checked before anything of the call is embedded or written. A hierarchical child carries its
 * parent's text (`parent_text`), so the message points at the parent chunk size.
 * @throws {ValidationError} naming the document, the chunk, the size and the limit.
 */
export function checkMetadataSize(chunks: Iterable<AI4RAGChunk>): void {
  for (const chunk of chunks) {
    const meta = chunk.metadata ?? {};
    const bytes = utf8Length(JSON.stringify(meta));
    if (bytes <= MILVUS_JSON_MAX_BYTES) continue;
    const document = typeof meta.document_id === 'string' ? meta.document_id : chunk.id;
    const parent = typeof meta.parent_text === 'string' ? meta.parent_text : undefined;
    const hint =
      parent === undefined
        ? 'store less metadata per chunk'
        : `its parent_text is ${utf8Length(parent)} bytes; use a smaller parent chunk size (--parent-chunk-size, parent_chunk_size)`;
    throw new ValidationError(
      `document "${document}": chunk ${chunk.id} has ${bytes} bytes of metadata as JSON, over Milvus' ${MILVUS_JSON_MAX_BYTES}-byte JSON field limit; ${hint}`,
    );
  }
}

function chunked<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const docKey = (documentId: string): string => `d:${documentId}`;
const writeKey = (version: string): string => `w:${version}`;
/** Primary key of a chunk row: versions never contain `|`, so `<version>|<id>` is unambiguous. */
const rowPk = (version: string, chunkId: string): string => `${version}|${chunkId}`;

/** Orders records by id in code-unit order (Milvus compares strings by bytes; ids of one page agree). */
function byDocumentId(a: DocumentRecord, b: DocumentRecord): number {
  return a.documentId < b.documentId ? -1 : a.documentId > b.documentId ? 1 : 0;
}

function toDocumentRecord(row: DocRow): DocumentRecord {
  return {
    documentId: row.document_id,
    contentHash: row.content_hash,
    chunkCount: Number(row.chunk_count),
    updatedAt: new Date(row.updated_at).toISOString(),
    ...(row.has_metadata && row.metadata !== null ? { metadata: row.metadata } : {}),
    ...(row.version ? { version: row.version } : {}),
    ...(row.sequencer ? { sequencer: row.sequencer } : {}),
  };
}

function toLease(row: WriteRow): Lease {
  return {
    version: row.version,
    owner: row.owner,
    expiresAt: Number(row.expires_at),
    leaseMs: Number(row.lease_ms),
    endedAt: Number(row.ended_at),
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

function checkSequencer(sequencer: string | undefined): void {
  if (sequencer !== undefined && (typeof sequencer !== 'string' || !SEQUENCER_RE.test(sequencer))) {
    throw new VectorStoreConfigError(
      `sequencer must be 1..128 hexadecimal digits, got ${JSON.stringify(String(sequencer).slice(0, 64))}`,
    );
  }
}

/** `(version == v and document_id in [...]) or ...` over (version → documents) pairs; `''` when empty. */
function pairsExpr(pairs: ReadonlyMap<string, ReadonlySet<string>>): string {
  const terms: string[] = [];
  for (const [version, docs] of pairs) {
    if (docs.size === 0) continue;
    terms.push(
      `(version == ${milvusLiteral(version)} and document_id in ${milvusList([...docs])})`,
    );
  }
  return terms.join(' or ');
}

function addPair(pairs: Map<string, Set<string>>, version: string, documentId: string): void {
  let docs = pairs.get(version);
  if (docs === undefined) {
    docs = new Set();
    pairs.set(version, docs);
  }
  docs.add(documentId);
}

/**
 * Why a document of a staged write may not be committed, or undefined when it may. Sequencers decide when both
 * sides carry one; else a deletion after the writer read the source refuses it; last, the staged chunks must be
 * exactly the version's (the same rules as the pgvector store).
 */
function refusalOf(
  entry: VersionedCommit,
  current: DocRow | undefined,
  staged: ReadonlySet<string> | undefined,
  version: string,
): { reason: CommitRefusal; message: string } | undefined {
  const id = entry.record.documentId;
  const deleted = current?.kind === KIND_TOMBSTONE;
  const stored = current?.sequencer || undefined;
  if (entry.sequencer !== undefined && stored !== undefined) {
    if (compareSequencers(entry.sequencer, stored) < 0) {
      return deleted
        ? {
            reason: 'deleted',
            message: `${id}: removed by a later event (sequencer ${stored} > ${entry.sequencer}); not restored`,
          }
        : {
            reason: 'superseded',
            message: `${id}: a newer upload is stored (sequencer ${stored} > ${entry.sequencer})`,
          };
    }
  } else if (deleted && entry.readAt !== undefined) {
    const deletedAt = Number(current.deleted_at);
    if (Date.parse(entry.readAt) < deletedAt) {
      return {
        reason: 'deleted',
        message: `${id}: deleted at ${new Date(deletedAt).toISOString()}, after this ingest read it (${entry.readAt}); not restored`,
      };
    }
  }
  const have = entry.chunkIds.filter((c) => staged?.has(c)).length;
  const size = staged?.size ?? 0;
  if (have !== entry.chunkIds.length || size !== entry.chunkIds.length) {
    return {
      reason: 'incomplete',
      message: `${id}: ${have} of ${entry.chunkIds.length} chunks staged under write ${version}${
        size > have ? ` (and ${size - have} unexpected)` : ''
      }; previous version kept`,
    };
  }
  return undefined;
}

/**
 * Milvus / Zilliz Cloud {@link VectorStore}. Chunks live in one collection (dense `vector` plus a `sparse` field
 * computed by Milvus' BM25 function over `content`); document records, deletion tombstones and staged-write
 * leases in `<name>_docs`. Hybrid search is fused on the server (RRFRanker / WeightedRanker); `normalized` has no
 * Milvus ranker and is fused client-side with {@link normalizedFuse}. Every read uses Strong consistency.
 *
 * Staged writes: each chunk row carries the `version` of the write that stored it (`''` for direct writes). A row
 * is visible when its version is `''` or is its document's committed version; reads exclude in-flight writes'
 * versions in the filter and check every versioned hit against its document's record (Milvus cannot join). See
 * `shared/src/vectorstores/milvus/README.md` for the order of the steps and what a crash between them leaves.
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
   * @throws {VectorStoreError} for an incompatible existing collection (another model, dimension or distance, or
   *   the layout of an earlier ai4rag release, which has no version field) or a Milvus failure.
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
      // The SDK starts connecting in its constructor and awaits that promise only inside calls: a server that
      // is down rejects it before any call, an unhandled rejection that kills the process (a Lambda container
      // dies with Runtime.ExitError). Calls still see the failure through their own await.
      (client as unknown as { connectPromise?: Promise<unknown> }).connectPromise?.catch(
        () => undefined,
      );
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
    else {
      const docs = check(
        'describeCollection',
        await c.describeCollection({ collection_name: this.docsCollection }),
      );
      this.checkDocsCompatible(docs.schema as Loose);
    }
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

  /** The refusal of a collection laid out by an earlier release (chunk_id primary key, no version). */
  private legacyLayout(collection: string): VectorStoreError {
    return new VectorStoreError(
      `collection ${collection} has the layout of an earlier ai4rag release (no staged-write version field; ` +
        `schema ${MILVUS_SCHEMA_VERSION} is needed). Milvus cannot change a primary key in place: re-ingest its ` +
        `documents into a new collection (--collection <new name>), then drop ${this.collectionName} and ` +
        `${this.docsCollection}`,
    );
  }

  private checkCompatible(schema: {
    description?: string;
    fields?: {
      name: string;
      is_primary_key?: boolean;
      type_params?: { key: string; value: unknown }[];
    }[];
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
    const pk = schema.fields?.find((f) => f.is_primary_key);
    const hasVersion = schema.fields?.some((f) => f.name === 'version') ?? false;
    if (pk?.name !== 'pk' || !hasVersion) throw this.legacyLayout(this.collectionName);
    // The model first: a reader told which model the collection holds can reopen it with that one.
    if (meta.embedding_model !== this.embedder.modelId) {
      throw new EmbeddingModelMismatchError(
        this.collectionName,
        String(meta.embedding_model),
        this.embedder.modelId,
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
  }

  private checkDocsCompatible(schema: {
    fields?: { name: string; is_primary_key?: boolean }[];
  }): void {
    const pk = schema.fields?.find((f) => f.is_primary_key);
    const names = new Set(schema.fields?.map((f) => f.name));
    if (pk?.name !== 'key' || !names.has('kind') || !names.has('ended_at')) {
      throw this.legacyLayout(this.docsCollection);
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
      schema: MILVUS_SCHEMA_VERSION,
    };
    const created = await this.createIgnoringRace(() =>
      this.client.createCollection({
        collection_name: this.collectionName,
        description: JSON.stringify(meta),
        consistency_level: STRONG,
        fields: [
          {
            name: 'pk',
            data_type: DataType.VarChar,
            is_primary_key: true,
            max_length: MAX_VERSION_LENGTH + 1 + MAX_ID_LENGTH,
          },
          { name: 'chunk_id', data_type: DataType.VarChar, max_length: MAX_ID_LENGTH },
          { name: 'version', data_type: DataType.VarChar, max_length: MAX_VERSION_LENGTH },
          {
            name: 'content',
            data_type: DataType.VarChar,
            max_length: MAX_CONTENT_BYTES,
            enable_analyzer: true,
          },
          { name: 'document_id', data_type: DataType.VarChar, max_length: MAX_DOC_ID_LENGTH },
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
        description: JSON.stringify({
          ai4rag: 'documents',
          collection: this.collectionName,
          schema: MILVUS_SCHEMA_VERSION,
        }),
        consistency_level: STRONG,
        fields: [
          // `d:<document id>` (record or tombstone) or `w:<version>` (lease of a staged write).
          {
            name: 'key',
            data_type: DataType.VarChar,
            is_primary_key: true,
            max_length: MAX_DOC_ID_LENGTH + 2,
          },
          { name: 'kind', data_type: DataType.VarChar, max_length: 16 },
          { name: 'document_id', data_type: DataType.VarChar, max_length: MAX_DOC_ID_LENGTH },
          { name: 'content_hash', data_type: DataType.VarChar, max_length: 256 },
          { name: 'chunk_count', data_type: DataType.Int64 },
          { name: 'updated_at', data_type: DataType.VarChar, max_length: 64 },
          { name: 'metadata', data_type: DataType.JSON },
          { name: 'has_metadata', data_type: DataType.Bool },
          { name: 'version', data_type: DataType.VarChar, max_length: MAX_VERSION_LENGTH },
          { name: 'sequencer', data_type: DataType.VarChar, max_length: 128 },
          // Tombstones: when the document was deleted (epoch ms).
          { name: 'deleted_at', data_type: DataType.Int64 },
          // Leases: who writes, until when (epoch ms), and the lease length a write renews.
          { name: 'owner', data_type: DataType.VarChar, max_length: MAX_OWNER_LENGTH },
          { name: 'expires_at', data_type: DataType.Int64 },
          { name: 'lease_ms', data_type: DataType.Int64 },
          // When the write ended (0 while it runs): ended writes are remembered for MAX_LEASE_SECONDS, so a late
          // redelivery cannot begin a committed version again.
          { name: 'ended_at', data_type: DataType.Int64 },
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

  // ---------------------------------------------------------------- low-level reads and writes

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

  /**
   * Every row matching `filter`, in pages of {@link SCAN_PAGE} ordered by primary key (`pk > last`): Milvus
   * returns a limited query's rows in primary-key order, which the SDK's own query iterator relies on too.
   */
  private async scan<T extends object>(
    collection: string,
    pkField: string,
    filter: string,
    outputFields: string[],
  ): Promise<T[]> {
    const out: T[] = [];
    let last: string | undefined;
    for (;;) {
      const page = await this.query<T>(
        collection,
        andExpr(filter, last === undefined ? '' : `${pkField} > ${milvusLiteral(last)}`),
        outputFields,
        SCAN_PAGE,
      );
      out.push(...page);
      if (page.length < SCAN_PAGE) return out;
      last = String((page[page.length - 1] as Record<string, unknown>)[pkField]);
    }
  }

  private async count(collection: string, filter = ''): Promise<number> {
    const rows = await this.query<Record<string, unknown>>(collection, filter, ['count(*)']);
    return Number(rows[0]?.['count(*)'] ?? 0);
  }

  private async deleteWhere(collection: string, filter: string): Promise<number> {
    const res = await this.run('delete', async () =>
      check('delete', await this.client.delete({ collection_name: collection, filter } as Loose)),
    );
    return Number(res.delete_cnt ?? 0);
  }

  private async upsertRows(
    collection: string,
    operation: string,
    rows: readonly Record<string, unknown>[],
  ): Promise<void> {
    for (const batch of chunked(rows, MILVUS_UPSERT_BATCH_SIZE)) {
      await this.run(operation, async () =>
        check(
          'upsert',
          await this.client.upsert({ collection_name: collection, data: batch as Loose }),
        ),
      );
    }
  }

  /** Docs-collection rows (records and tombstones) of some documents, keyed by document id. */
  private async docRows(documentIds: readonly string[]): Promise<Map<string, DocRow>> {
    const out = new Map<string, DocRow>();
    for (const batch of chunked([...new Set(documentIds)], ID_LIST_BATCH)) {
      const rows = await this.query<DocRow>(
        this.docsCollection,
        `key in ${milvusList(batch.map(docKey))}`,
        DOC_FIELDS,
      );
      for (const row of rows) {
        if (row.kind === KIND_DOC || row.kind === KIND_TOMBSTONE) out.set(row.document_id, row);
      }
    }
    return out;
  }

  private async writeRecords(
    records: readonly (DocumentRecord & { version?: string; sequencer?: string })[],
  ): Promise<void> {
    await this.upsertRows(
      this.docsCollection,
      'put documents',
      records.map((r) => ({
        key: docKey(r.documentId),
        kind: KIND_DOC,
        document_id: r.documentId,
        content_hash: r.contentHash,
        chunk_count: r.chunkCount,
        updated_at: r.updatedAt,
        metadata: r.metadata ?? {},
        has_metadata: r.metadata !== undefined,
        version: r.version ?? '',
        sequencer: r.sequencer ?? '',
        deleted_at: 0,
        owner: '',
        expires_at: 0,
        lease_ms: 0,
        ended_at: 0,
        dummy: [0, 0],
      })),
    );
  }

  private async writeTombstone(
    documentId: string,
    sequencer: string,
    deletedAt: number,
  ): Promise<void> {
    await this.upsertRows(this.docsCollection, 'delete document', [
      {
        key: docKey(documentId),
        kind: KIND_TOMBSTONE,
        document_id: documentId,
        content_hash: '',
        chunk_count: 0,
        updated_at: new Date(deletedAt).toISOString(),
        metadata: {},
        has_metadata: false,
        version: '',
        sequencer,
        deleted_at: deletedAt,
        owner: '',
        expires_at: 0,
        lease_ms: 0,
        ended_at: 0,
        dummy: [0, 0],
      },
    ]);
  }

  // ---------------------------------------------------------------- leases

  /** Leases of the writes still running (lapsed or not). */
  private async leases(): Promise<Lease[]> {
    const rows = await this.scan<WriteRow>(
      this.docsCollection,
      'key',
      `kind == ${milvusLiteral(KIND_WRITE)} and ended_at == 0`,
      WRITE_FIELDS,
    );
    return rows.map(toLease);
  }

  private async lease(version: string): Promise<Lease | undefined> {
    const rows = await this.query<WriteRow>(
      this.docsCollection,
      `key == ${milvusLiteral(writeKey(version))}`,
      WRITE_FIELDS,
    );
    return rows[0] === undefined ? undefined : toLease(rows[0]);
  }

  private async putLease(lease: Lease): Promise<void> {
    await this.upsertRows(this.docsCollection, 'write lease', [
      {
        key: writeKey(lease.version),
        kind: KIND_WRITE,
        document_id: '',
        content_hash: '',
        chunk_count: 0,
        updated_at: new Date().toISOString(),
        metadata: {},
        has_metadata: false,
        version: lease.version,
        sequencer: '',
        deleted_at: 0,
        owner: lease.owner,
        expires_at: lease.expiresAt,
        lease_ms: lease.leaseMs,
        ended_at: lease.endedAt,
        dummy: [0, 0],
      },
    ]);
  }

  /** Marks a write ended (its lease row stays, so that it cannot be begun again). */
  private async endLease(lease: Lease): Promise<void> {
    await this.putLease({ ...lease, endedAt: Date.now() });
  }

  /** Whether a lease lapsed (by time, or because its local owner process is gone). */
  private static lapsed(lease: Lease, now: number): boolean {
    return lease.expiresAt < now || isDeadLocalOwner(lease.owner);
  }

  /**
   * The live lease of `version`, renewed when less than half of it is left.
   * @throws {WriteEndedError} when the write ended (finished, aborted, swept), never began, or expired.
   */
  private async requireLease(version: string, renew: boolean): Promise<Lease> {
    const lease = await this.lease(version);
    const now = Date.now();
    if (lease === undefined || lease.endedAt > 0) {
      throw new WriteEndedError(
        `write ${version} on collection ${this.collectionName} ${lease ? 'ended' : 'is unknown or ended'} ` +
          '(finished, aborted, or swept after its lease lapsed); begin a new write',
      );
    }
    if (lease.expiresAt < now) {
      throw new WriteEndedError(
        `write ${version} on collection ${this.collectionName} expired: its lease lapsed at ${new Date(lease.expiresAt).toISOString()}`,
      );
    }
    if (renew && lease.expiresAt - now < lease.leaseMs / 2) {
      const renewed = { ...lease, expiresAt: now + lease.leaseMs };
      await this.putLease(renewed);
      return renewed;
    }
    return lease;
  }

  /** Documents whose committed record is at one of `versions`, per version. */
  private async committedAt(versions: readonly string[]): Promise<Map<string, Set<string>>> {
    const out = new Map<string, Set<string>>();
    for (const batch of chunked([...new Set(versions)], ID_LIST_BATCH)) {
      const rows = await this.scan<{ key: string; document_id: string; version: string }>(
        this.docsCollection,
        'key',
        `kind == ${milvusLiteral(KIND_DOC)} and version in ${milvusList(batch)}`,
        ['key', 'document_id', 'version'],
      );
      for (const r of rows) addPair(out, r.version, r.document_id);
    }
    return out;
  }

  /**
   * Removes a running write's rows except those of documents committed at its version (a finish that crashed
   * after its switch, or a lease re-created by a renewal racing the end), then marks it ended. Returns the
   * chunks removed.
   */
  private async sweepVersion(lease: Lease): Promise<number> {
    const { version } = lease;
    const committed = (await this.committedAt([version])).get(version) ?? new Set<string>();
    const deleted = await this.deleteWhere(
      this.collectionName,
      andExpr(
        `version == ${milvusLiteral(version)}`,
        committed.size > 0 ? `document_id not in ${milvusList([...committed])}` : '',
      ),
    );
    await this.endLease(lease);
    return deleted;
  }

  // ---------------------------------------------------------------- visibility

  /**
   * The filter hiding every in-flight write's rows: `version not in [...]` for versions with nothing committed,
   * and, for a version some documents are already committed at, only its rows of other documents.
   */
  private async hiddenExpr(): Promise<string> {
    const versions = (await this.leases()).map((l) => l.version);
    if (versions.length === 0) return '';
    const committed = await this.committedAt(versions);
    const plain = versions.filter((v) => !committed.has(v));
    const parts = plain.length > 0 ? [`version not in ${milvusList(plain)}`] : [];
    for (const [version, docs] of committed) {
      parts.push(
        `not (version == ${milvusLiteral(version)} and document_id not in ${milvusList([...docs])})`,
      );
    }
    return andExpr(...parts);
  }

  /** Hits of a staged version that is not their document's committed version (orphans, superseded rows). */
  private async invisible(rows: readonly ChunkRow[]): Promise<ChunkRow[]> {
    const versioned = rows.filter((r) => r.version !== '' && r.version !== undefined);
    if (versioned.length === 0) return [];
    const records = await this.docRows(versioned.map((r) => r.document_id));
    return versioned.filter((r) => {
      const rec = records.get(r.document_id);
      return rec?.kind !== KIND_DOC || rec.version !== r.version;
    });
  }

  /**
   * Runs a search until every hit is visible: versioned hits are checked against their document's record, and
   * the (version, document) pairs found invisible are excluded from the next round.
   */
  private async visibleSearch(
    filter: string,
    excluded: Map<string, Set<string>>,
    fetch: (filter: string) => Promise<ChunkRow[]>,
  ): Promise<ChunkRow[]> {
    for (let round = 1; ; round++) {
      const exclusion = pairsExpr(excluded);
      const rows = await fetch(andExpr(filter, exclusion ? `not (${exclusion})` : ''));
      const bad = await this.invisible(rows);
      if (bad.length === 0) return rows;
      for (const r of bad) addPair(excluded, r.version, r.document_id);
      if (round >= MAX_VISIBILITY_ROUNDS) {
        const hidden = new Set(bad);
        return rows.filter((r) => !hidden.has(r));
      }
    }
  }

  // ---------------------------------------------------------------- chunk writes

  /**
   * Upserts chunks whose vectors are already computed, in batches of {@link MILVUS_UPSERT_BATCH_SIZE}; duplicate
   * ids within the call: the first wins. With `version`, the rows are staged under that write (renewing its
   * lease) and stay invisible until it commits them.
   * @returns the number of distinct chunks stored.
   * @throws {VectorStoreError} for a malformed chunk (id, text size, vector), a write that ended or expired, or a
   *   Milvus failure.
   * @throws {ValidationError} for chunk metadata over Milvus' JSON limit ({@link checkMetadataSize}); nothing is
   *   written.
   */
  async upsert(records: EmbeddedChunk[], options: { version?: string } = {}): Promise<number> {
    this.assertOpen();
    const version = options.version === undefined ? '' : checkVersion(options.version);
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
      // Checked row by row before the first write: an oversize one leaves the whole call unwritten.
      checkMetadataSize([chunk]);
      const meta = chunk.metadata ?? ({} as ChunkMetadata);
      const seq = meta.sequence_number;
      rows.push({
        pk: rowPk(version, chunk.id),
        chunk_id: chunk.id,
        version,
        content: chunk.text,
        document_id: typeof meta.document_id === 'string' ? meta.document_id : '',
        sequence_number: Number.isSafeInteger(seq) ? seq : 0,
        chunk_content: meta,
        vector,
      });
    }
    if (rows.length === 0) return 0;
    if (version !== '') await this.requireLease(version, true);
    await this.upsertRows(this.collectionName, 'upsert', rows);
    return rows.length;
  }

  /**
   * Embeds (≤ {@link MILVUS_EMBED_BATCH_SIZE} texts per call) and upserts chunks; duplicate ids: first wins.
   * With `version`, the write's lease is checked before anything is embedded.
   * @returns the number of distinct chunks stored.
   * @throws {ValidationError} when a chunk's metadata is over Milvus' JSON limit ({@link checkMetadataSize}),
   *   before anything of the call is embedded or written.
   */
  async addChunks(chunks: AI4RAGChunk[], options: { version?: string } = {}): Promise<number> {
    this.assertOpen();
    if (options.version !== undefined && chunks.length > 0) {
      await this.requireLease(checkVersion(options.version), false);
    }
    const seen = new Set<string>();
    const unique: AI4RAGChunk[] = [];
    for (const c of chunks) {
      if (seen.has(c.id)) continue;
      seen.add(c.id);
      unique.push(c);
    }
    // Every slice's metadata is checked before the first is embedded or written: nothing of the call is stored.
    checkMetadataSize(unique);
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
      stored += await this.upsert(records, options);
    }
    return stored;
  }

  // ---------------------------------------------------------------- staged writes

  /**
   * Starts (or renews) a staged write: upserts its lease row, after sweeping every write whose lease lapsed or
   * whose local owner process is gone (their rows, then their lease).
   * @returns the version token.
   * @throws {VectorStoreConfigError} for a bad version, lease or owner.
   * @throws {WriteEndedError} when the version names a write that already ended (remembered for a week).
   */
  async beginWrite(options: BeginWriteOptions = {}): Promise<string> {
    this.assertOpen();
    const version = options.version === undefined ? newVersion() : checkVersion(options.version);
    const seconds = checkLease(options.leaseSeconds ?? DEFAULT_LEASE_SECONDS);
    const owner = options.owner ?? localOwner();
    if (typeof owner !== 'string' || owner.length === 0 || owner.length > MAX_OWNER_LENGTH) {
      throw new VectorStoreConfigError(
        `owner must be a string of 1..${MAX_OWNER_LENGTH} characters`,
      );
    }
    const now = Date.now();
    for (const lease of await this.leases()) {
      if (MilvusVectorStore.lapsed(lease, now)) await this.sweepVersion(lease);
    }
    // Ended writes are remembered as long as a lease can last, then forgotten.
    await this.deleteWhere(
      this.docsCollection,
      `kind == ${milvusLiteral(KIND_WRITE)} and ended_at > 0 and ended_at < ${milvusLiteral(
        now - MAX_LEASE_SECONDS * 1000,
      )}`,
    );
    if (((await this.lease(version))?.endedAt ?? 0) > 0) {
      throw new WriteEndedError(
        `write ${version} on collection ${this.collectionName} has already ended; it cannot be begun again`,
      );
    }
    const leaseMs = Math.max(1, Math.round(seconds * 1000));
    await this.putLease({ version, owner, expiresAt: Date.now() + leaseMs, leaseMs, endedAt: 0 });
    return version;
  }

  /**
   * Commits documents of a staged write. Milvus has no transactions or locks, so the steps are ordered for
   * every intermediate state to stay correct to readers (see the README):
   * 1. the lease is checked (missing, ended or lapsed: every document is refused `expired`, a lapsed write is
   *    swept) and renewed;
   * 2. each document is checked (sequencers, tombstones, staged chunks exactly its `chunkIds`);
   * 3. staged rows that will not be committed are deleted (still hidden: the write is in flight);
   * 4. the records of the committed documents are upserted at this version (the switch, atomic per document);
   * 5. their previous versions' rows are deleted (hidden since 4 by the record check), then what a racing
   *    writer of the same documents left (see `settle`);
   * 6. the lease is marked ended (kept a week, so the version cannot be begun again).
   * @throws {VectorStoreError} for a malformed entry (before any change) or a Milvus failure.
   */
  async finishWrite(version: string, entries: VersionedCommit[]): Promise<WriteOutcome> {
    this.assertOpen();
    checkVersion(version);
    const ids = new Set<string>();
    for (const e of entries) {
      checkDocumentRecord(e.record);
      checkSequencer(e.sequencer);
      const id = e.record.documentId;
      if (ids.has(id)) throw new VectorStoreError(`document ${id} appears twice in one commit`);
      ids.add(id);
      if (
        !Array.isArray(e.chunkIds) ||
        e.record.chunkCount !== e.chunkIds.length ||
        new Set(e.chunkIds).size !== e.chunkIds.length
      ) {
        throw new VectorStoreError(
          `document ${id}: chunkCount must equal the number of distinct chunkIds`,
        );
      }
      if (e.readAt !== undefined && Number.isNaN(Date.parse(e.readAt))) {
        throw new VectorStoreError(`document ${id}: readAt must be an ISO timestamp`);
      }
    }
    const outcome: WriteOutcome = { committed: [], refused: [], chunksDeleted: 0 };
    // 1. The lease.
    const lease = await this.lease(version);
    if (lease === undefined || lease.endedAt > 0 || lease.expiresAt < Date.now()) {
      if (lease !== undefined && lease.endedAt === 0) {
        outcome.chunksDeleted += await this.sweepVersion(lease);
      }
      const current = await this.docRows([...ids]);
      for (const e of entries) {
        const id = e.record.documentId;
        const rec = current.get(id);
        // A redelivered finish of a write that did commit this document.
        if (rec?.kind === KIND_DOC && rec.version === version) outcome.committed.push(id);
        else {
          outcome.refused.push({
            documentId: id,
            reason: 'expired',
            message: `${id}: write ${version} ended or expired before it committed (its staged chunks are swept)`,
          });
        }
      }
      return outcome;
    }
    await this.putLease({ ...lease, expiresAt: Date.now() + lease.leaseMs });
    // 2. Check each document.
    const current = await this.docRows([...ids]);
    const staged = new Map<string, Map<string, string>>();
    for (const batch of chunked([...ids], ID_LIST_BATCH)) {
      const rows = await this.scan<{ pk: string; chunk_id: string; document_id: string }>(
        this.collectionName,
        'pk',
        `version == ${milvusLiteral(version)} and document_id in ${milvusList(batch)}`,
        ['pk', 'chunk_id', 'document_id'],
      );
      for (const r of rows) {
        let m = staged.get(r.document_id);
        if (m === undefined) {
          m = new Map();
          staged.set(r.document_id, m);
        }
        m.set(r.chunk_id, r.pk);
      }
    }
    const commits: VersionedCommit[] = [];
    for (const e of entries) {
      const id = e.record.documentId;
      const chunkIds = staged.get(id);
      const refusal = refusalOf(
        e,
        current.get(id),
        chunkIds === undefined ? undefined : new Set(chunkIds.keys()),
        version,
      );
      if (refusal === undefined) commits.push(e);
      else outcome.refused.push({ documentId: id, ...refusal });
    }
    // 3. Staged rows not committed: of refused documents and of documents not in this finish (but never the
    // rows of a document already committed at this version).
    const keep = new Set(commits.map((e) => e.record.documentId));
    for (const id of (await this.committedAt([version])).get(version) ?? []) keep.add(id);
    outcome.chunksDeleted += await this.deleteWhere(
      this.collectionName,
      andExpr(
        `version == ${milvusLiteral(version)}`,
        keep.size > 0 ? `document_id not in ${milvusList([...keep])}` : '',
      ),
    );
    if (commits.length > 0) {
      // 4. The switch.
      // The stored sequencer is kept when the commit has none (a CLI ingest of a document the Lambda flow
      // stored), so that an older S3 event arriving later is still refused.
      await this.writeRecords(
        commits.map((e) => {
          const sequencer =
            e.sequencer ??
            e.record.sequencer ??
            (current.get(e.record.documentId)?.sequencer || '');
          return { ...e.record, version, ...(sequencer ? { sequencer } : {}) };
        }),
      );
      // 5. Previous versions (direct rows when the document had no versioned record).
      const previous = new Map<string, Set<string>>();
      for (const e of commits) {
        const id = e.record.documentId;
        const rec = current.get(id);
        const prev = rec?.kind === KIND_DOC ? rec.version : '';
        if (prev !== version) addPair(previous, prev, id);
      }
      for (const [prev, docs] of previous) {
        for (const batch of chunked([...docs], ID_LIST_BATCH)) {
          outcome.chunksDeleted += await this.deleteWhere(
            this.collectionName,
            `version == ${milvusLiteral(prev)} and document_id in ${milvusList(batch)}`,
          );
        }
      }
      outcome.chunksDeleted += await this.settle(
        version,
        commits.map((e) => e.record.documentId),
      );
      outcome.committed.push(...commits.map((e) => e.record.documentId));
    }
    // 6. The write ends.
    await this.endLease(lease);
    return outcome;
  }

  /**
   * After a commit of `documentIds` at `version`, removes what racing writers left: rows of other versions of
   * these documents whose write ended without them being committed (a writer that committed after this one read
   * the records, and lost), and this write's own rows of a document another writer committed after this one (it
   * won). Read in the order rows → leases → records: a row's lease exists before the row, so a row whose lease
   * is gone and whose version is not its document's record belongs to no one.
   * @returns chunks removed.
   */
  private async settle(version: string, documentIds: readonly string[]): Promise<number> {
    const others = new Map<string, Set<string>>();
    for (const batch of chunked(documentIds, ID_LIST_BATCH)) {
      const rows = await this.scan<{ pk: string; document_id: string; version: string }>(
        this.collectionName,
        'pk',
        `document_id in ${milvusList(batch)} and version not in ${milvusList(['', version])}`,
        ['pk', 'document_id', 'version'],
      );
      for (const r of rows) addPair(others, r.version, r.document_id);
    }
    const leases =
      others.size > 0 ? new Set((await this.leases()).map((l) => l.version)) : new Set();
    const records = await this.docRows(documentIds);
    const orphans = new Map<string, Set<string>>();
    for (const [other, docs] of others) {
      for (const id of docs) {
        const rec = records.get(id);
        if (!leases.has(other) && !(rec?.kind === KIND_DOC && rec.version === other)) {
          addPair(orphans, other, id);
        }
      }
    }
    for (const id of documentIds) {
      const rec = records.get(id);
      if (!(rec?.kind === KIND_DOC && rec.version === version)) addPair(orphans, version, id);
    }
    let deleted = 0;
    for (const [v, docs] of orphans) {
      for (const batch of chunked([...docs], ID_LIST_BATCH)) {
        deleted += await this.deleteWhere(
          this.collectionName,
          `version == ${milvusLiteral(v)} and document_id in ${milvusList(batch)}`,
        );
      }
    }
    return deleted;
  }

  /**
   * Ends a running staged write without committing: removes its staged rows, then marks it ended. A write that
   * already ended (its rows, if any, are a committed version) or is unknown is left alone: 0.
   * @returns chunks removed.
   */
  async abortWrite(version: string): Promise<number> {
    this.assertOpen();
    const lease = await this.lease(checkVersion(version));
    if (lease === undefined || lease.endedAt > 0) return 0;
    return this.sweepVersion(lease);
  }

  /**
   * Deletes a document: writes its tombstone (deletion time and sequencer) and removes its visible rows, so that
   * an older ingest of it finishing later is refused. A versioned document is tombstoned first (its rows turn
   * invisible at once); direct rows are deleted first (they do not depend on the record).
   * @returns chunks deleted, or -1 when the stored record or tombstone carries a newer sequencer.
   */
  async deleteDocument(documentId: string, options: DeleteDocumentOptions = {}): Promise<number> {
    this.assertOpen();
    if (typeof documentId !== 'string' || documentId.length === 0) {
      throw new VectorStoreError('documentId must be a non-empty string');
    }
    checkSequencer(options.sequencer);
    const current = (await this.docRows([documentId])).get(documentId);
    const stored = current?.sequencer || undefined;
    if (
      options.sequencer !== undefined &&
      stored !== undefined &&
      compareSequencers(options.sequencer, stored) < 0
    ) {
      return -1;
    }
    const sequencer = options.sequencer ?? stored ?? '';
    const committed = current?.kind === KIND_DOC ? current.version : '';
    const rowsExpr = `document_id == ${milvusLiteral(documentId)} and version in ${milvusList([
      ...new Set(['', committed]),
    ])}`;
    if (committed !== '') {
      await this.writeTombstone(documentId, sequencer, Date.now());
      return this.deleteWhere(this.collectionName, rowsExpr);
    }
    const deleted = await this.deleteWhere(this.collectionName, rowsExpr);
    await this.writeTombstone(documentId, sequencer, Date.now());
    return deleted;
  }

  /**
   * Verifies I1–I2 from a full scan, read in the order rows → leases → records (a row's lease always exists
   * before the row, so a row seen without a lease or a committed record is an orphan). With `repair`: sweeps
   * lapsed writes, deletes orphans, and marks mismatched documents for re-indexing (record count set to what
   * is stored, content hash cleared so the next ingest redoes them).
   */
  async checkIntegrity(options: { repair?: boolean } = {}): Promise<IntegrityReport> {
    this.assertOpen();
    // (version, document) → rows
    const pairs = new Map<string, Map<string, number>>();
    for (const r of await this.scan<{ pk: string; document_id: string; version: string }>(
      this.collectionName,
      'pk',
      '',
      ['pk', 'document_id', 'version'],
    )) {
      let docs = pairs.get(r.version);
      if (docs === undefined) {
        docs = new Map();
        pairs.set(r.version, docs);
      }
      docs.set(r.document_id, (docs.get(r.document_id) ?? 0) + 1);
    }
    const leases = new Map((await this.leases()).map((l) => [l.version, l]));
    const records = new Map(
      (
        await this.scan<DocRow>(
          this.docsCollection,
          'key',
          `kind == ${milvusLiteral(KIND_DOC)}`,
          DOC_FIELDS,
        )
      ).map((r) => [r.document_id, r]),
    );
    const now = Date.now();
    let chunks = 0;
    let orphanChunks = 0;
    const orphans = new Map<string, Set<string>>();
    const stored = new Map<string, number>();
    const writeChunks = new Map<string, number>();
    for (const [version, docs] of pairs) {
      for (const [documentId, n] of docs) {
        if (version === '' || records.get(documentId)?.version === version) {
          chunks += n;
          stored.set(documentId, (stored.get(documentId) ?? 0) + n);
        } else if (leases.has(version)) {
          writeChunks.set(version, (writeChunks.get(version) ?? 0) + n);
        } else {
          orphanChunks += n;
          addPair(orphans, version, documentId);
        }
      }
    }
    const mismatched: IntegrityReport['mismatched'] = [];
    for (const [documentId, rec] of records) {
      const n = stored.get(documentId) ?? 0;
      if (n !== Number(rec.chunk_count)) {
        mismatched.push({ documentId, recorded: Number(rec.chunk_count), stored: n });
      }
    }
    mismatched.sort((a, b) => (a.documentId < b.documentId ? -1 : 1));
    const liveWrites: IntegrityReport['liveWrites'] = [];
    const expiredWrites: IntegrityReport['expiredWrites'] = [];
    for (const lease of leases.values()) {
      const n = writeChunks.get(lease.version) ?? 0;
      if (MilvusVectorStore.lapsed(lease, now)) {
        expiredWrites.push({ version: lease.version, owner: lease.owner, chunks: n });
      } else {
        liveWrites.push({
          version: lease.version,
          owner: lease.owner,
          expiresAt: new Date(lease.expiresAt).toISOString(),
          chunks: n,
        });
      }
    }
    const report: IntegrityReport = {
      collection: this.collectionName,
      documents: records.size,
      chunks,
      orphanChunks,
      mismatched,
      liveWrites,
      expiredWrites,
      clean: orphanChunks === 0 && mismatched.length === 0 && expiredWrites.length === 0,
    };
    if (options.repair !== true) return report;
    const repaired = { chunksDeleted: 0, writesSwept: 0, recordsFixed: 0 };
    for (const w of expiredWrites) {
      repaired.chunksDeleted += await this.sweepVersion(leases.get(w.version) as Lease);
      repaired.writesSwept += 1;
    }
    for (const [version, docs] of orphans) {
      for (const batch of chunked([...docs], ID_LIST_BATCH)) {
        repaired.chunksDeleted += await this.deleteWhere(
          this.collectionName,
          `version == ${milvusLiteral(version)} and document_id in ${milvusList(batch)}`,
        );
      }
    }
    const fixes = mismatched.map((m) => {
      const rec = toDocumentRecord(records.get(m.documentId) as DocRow);
      return { ...rec, chunkCount: m.stored, contentHash: '' };
    });
    if (fixes.length > 0) await this.writeRecords(fixes);
    repaired.recordsFixed = fixes.length;
    return { ...report, repaired };
  }

  // ---------------------------------------------------------------- reads

  /** Higher-is-better score of a dense hit: Milvus returns squared distances for L2. */
  private denseScore(raw: number): number {
    return this.distance === 'l2' ? 1 / (1 + Math.sqrt(Math.max(0, raw))) : raw;
  }

  /**
   * Vector or hybrid (dense + BM25 full-text) search over visible chunks. `rrf` and `weighted` are fused by
   * Milvus (RRFRanker(k), WeightedRanker([α, 1 − α]), dense first); `normalized` fetches both lists and fuses
   * them client-side. Parameters are validated before any I/O.
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
    const filter = andExpr(
      p.filter === undefined ? '' : filterNodeExpr(p.filter),
      await this.hiddenExpr(),
    );
    const excluded = new Map<string, Set<string>>();
    const score = (s: number | undefined): number | undefined =>
      p.includeScores ? (s ?? 0) : undefined;
    if (p.searchMode === 'vector') {
      const rows = await this.visibleSearch(filter, excluded, (f) =>
        this.annSearch('vector', qvec, p.k, f),
      );
      return rows.map((r) => toHit(r, score(this.denseScore(Number(r.score)))));
    }
    const n = Math.max(this.hybridCandidates, p.k);
    if (p.rankerStrategy === 'normalized') {
      const dense = await this.visibleSearch(filter, excluded, (f) =>
        this.annSearch('vector', qvec, n, f),
      );
      const sparse = await this.visibleSearch(filter, excluded, (f) =>
        this.annSearch('sparse', query, n, f),
      );
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
    const rows = await this.visibleSearch(filter, excluded, async (f) => {
      const res = await this.run('hybrid search', async () =>
        check(
          'hybridSearch',
          await this.client.hybridSearch({
            collection_name: this.collectionName,
            data: [
              { data: [qvec], anns_field: 'vector', limit: n, ...(f ? { expr: f } : {}) },
              { data: [query], anns_field: 'sparse', limit: n, ...(f ? { expr: f } : {}) },
            ],
            rerank,
            limit: p.k,
            ...(f ? { filter: f } : {}),
            output_fields: CHUNK_FIELDS,
            consistency_level: STRONG,
          } as Loose),
        ),
      );
      return firstQuery(res.results);
    });
    return rows.map((r) => toHit(r, score(Number(r.score))));
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

  /** `document_id == d and version in ['', committed]`: the rows of a document readers see. */
  private async visibleRowsExpr(documentId: string): Promise<string> {
    const rec = (await this.docRows([documentId])).get(documentId);
    const committed = rec?.kind === KIND_DOC ? rec.version : '';
    return `document_id == ${milvusLiteral(documentId)} and version in ${milvusList([
      ...new Set(['', committed]),
    ])}`;
  }

  /**
   * Chunks of one document with sequence_number in [from, to], ordered by sequence_number (window retrieval):
   * those of its committed version (and direct writes). Read in primary-key pages, so any range works.
   * @throws {VectorStoreError} for non-integer bounds or a Milvus failure.
   */
  async getChunksBySequence(documentId: string, from: number, to: number): Promise<SearchHit[]> {
    this.assertOpen();
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to)) {
      throw new VectorStoreError('sequence bounds must be integers');
    }
    if (to < from) return [];
    const rows = await this.scan<ChunkRow & { pk: string; sequence_number: number | string }>(
      this.collectionName,
      'pk',
      andExpr(
        await this.visibleRowsExpr(documentId),
        `sequence_number >= ${milvusLiteral(from)} and sequence_number <= ${milvusLiteral(to)}`,
      ),
      ['pk', ...CHUNK_FIELDS, 'sequence_number'],
    );
    return rows
      .sort(
        (a, b) =>
          Number(a.sequence_number) - Number(b.sequence_number) ||
          (a.chunk_id < b.chunk_id ? -1 : a.chunk_id > b.chunk_id ? 1 : 0),
      )
      .map((r) => toHit(r));
  }

  /**
   * Deletes a document's visible chunks except `keepIds`; without `keepIds` deletes the document as
   * {@link deleteDocument} does (record replaced by a tombstone).
   * @returns the number of chunks deleted.
   */
  async deleteByDocument(
    documentId: string,
    options: { keepIds?: string[] } = {},
  ): Promise<number> {
    this.assertOpen();
    if (options.keepIds === undefined) return this.deleteDocument(documentId);
    return this.deleteWhere(this.collectionName, await this.staleExpr(documentId, options.keepIds));
  }

  /** The document's visible rows, minus `keepIds` when non-empty. */
  private async staleExpr(documentId: string, keepIds: readonly string[]): Promise<string> {
    return andExpr(
      await this.visibleRowsExpr(documentId),
      keepIds.length > 0 ? `chunk_id not in ${milvusList(keepIds)}` : '',
    );
  }

  /**
   * Deletes the chunks matching a non-empty filter (the language of `filter.ts`; typed: 1 ≠ '1').
   * Document records are left alone.
   * @throws {MetadataFilterError} for an empty or malformed filter.
   */
  async deleteByFilter(filter: MetadataFilter): Promise<number> {
    const expr = metadataFilterExpr(filter, { nonEmpty: true });
    this.assertOpen();
    return this.deleteWhere(this.collectionName, expr);
  }

  /** Creates or replaces a document record (replacing a tombstone too). */
  async putDocument(record: DocumentRecord): Promise<void> {
    this.assertOpen();
    checkDocumentRecord(record);
    checkSequencer(record.sequencer);
    await this.writeRecords([record]);
  }

  /**
   * Deletes the stale visible chunks of several documents (those not in their `keepIds`), then upserts their
   * records. Milvus has no transactions: a failure between the two steps leaves old records, which the next
   * ingestion rewrites (the chunk deletes are idempotent).
   * @throws {VectorStoreError} when a document appears twice, for a bad record, or a Milvus failure.
   */
  async commitDocuments(entries: DocumentCommit[]): Promise<number> {
    this.assertOpen();
    if (entries.length === 0) return 0;
    const ids = new Set<string>();
    for (const e of entries) {
      checkDocumentRecord(e.record);
      checkSequencer(e.record.sequencer);
      if (ids.has(e.record.documentId)) {
        throw new VectorStoreError(`document ${e.record.documentId} appears twice in one commit`);
      }
      ids.add(e.record.documentId);
    }
    let deleted = 0;
    for (const e of entries) {
      deleted += await this.deleteWhere(
        this.collectionName,
        await this.staleExpr(e.record.documentId, e.keepIds),
      );
    }
    await this.writeRecords(entries.map((e) => e.record));
    return deleted;
  }

  /** Records of several documents (deleted documents' tombstones are not records). */
  async getDocuments(documentIds: string[]): Promise<Map<string, DocumentRecord>> {
    this.assertOpen();
    const out = new Map<string, DocumentRecord>();
    for (const [id, row] of await this.docRows(documentIds)) {
      if (row.kind === KIND_DOC) out.set(id, toDocumentRecord(row));
    }
    return out;
  }

  async getDocument(documentId: string): Promise<DocumentRecord | undefined> {
    return (await this.getDocuments([documentId])).get(documentId);
  }

  /**
   * Document records ordered by id: a page is one limited query (`key > "d:<after>"`; Milvus returns a limited
   * query's rows in primary-key order, and every record key is `d:` + its id).
   * @throws {VectorStoreError} when all records are asked of a collection holding more than Milvus' query window.
   */
  async listDocuments(options: ListDocumentsOptions = {}): Promise<DocumentRecord[]> {
    this.assertOpen();
    checkListLimit(options.limit);
    const filter = andExpr(
      `kind == ${milvusLiteral(KIND_DOC)}`,
      options.after === undefined ? '' : `key > ${milvusLiteral(docKey(options.after))}`,
    );
    const limit = options.limit ?? MILVUS_QUERY_WINDOW;
    const rows = await this.query<DocRow>(this.docsCollection, filter, DOC_FIELDS, limit);
    if (options.limit === undefined && rows.length >= MILVUS_QUERY_WINDOW) {
      throw new VectorStoreError(
        `collection ${this.collectionName} holds ${MILVUS_QUERY_WINDOW} or more documents; listing is limited to fewer`,
      );
    }
    return rows.map(toDocumentRecord).sort(byDocumentId);
  }

  /**
   * Counts of visible documents and chunks: direct rows counted by Milvus, plus the recorded chunk count of each
   * document committed by a staged write (exactly its rows: `finishWrite` checks them; `checkIntegrity` verifies).
   */
  async stats(): Promise<CollectionStats> {
    this.assertOpen();
    const versioned = await this.scan<{ key: string; chunk_count: number | string }>(
      this.docsCollection,
      'key',
      `kind == ${milvusLiteral(KIND_DOC)} and version != ""`,
      ['key', 'chunk_count'],
    );
    return {
      collection: this.collectionName,
      documents: await this.count(this.docsCollection, `kind == ${milvusLiteral(KIND_DOC)}`),
      chunks:
        (await this.count(this.collectionName, 'version == ""')) +
        versioned.reduce((sum, r) => sum + Number(r.chunk_count), 0),
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
