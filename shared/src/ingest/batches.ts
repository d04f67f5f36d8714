/**
 * The chunk-batch format: how chunks travel from the chunk step to the embed step (the knowledge-base queues and
 * the optimizer's index fan-out). A batch is one JSON object in the object store; queue messages and state-machine
 * payloads carry only its key, so no message comes near the SQS or Step Functions payload limits.
 */
import * as z from 'zod';
import type { AI4RAGChunk, ChunkingOptions } from '../chunking/types.js';
import { ValidationError } from '../errors.js';
import { getJson, type ObjectStore, putJson } from '../ports/object-store.js';
import type { DocumentCommit } from '../vectorstores/types.js';

/** Chunks per batch: the largest embedding request the embed step makes (one call per batch). */
export const MAX_BATCH_CHUNKS = 1024;
/** Serialized size per batch, well under Lambda's memory and far from S3 single-PUT limits. */
export const MAX_BATCH_BYTES = 5 * 1024 * 1024;
/** Format tag written into every batch, so a reader can reject objects of another shape or version. */
export const CHUNK_BATCH_FORMAT = 'ai4rag.chunk-batch.v1';

/** What every batch of one write carries besides its chunks. */
export interface ChunkBatchHeader {
  /** Target collection of the vector store. */
  collection: string;
  /** Embedding model id the chunks must be embedded with. */
  embeddingModel: string;
  chunking: ChunkingOptions;
  /** The document the chunks come from (absent for multi-document optimizer batches). */
  documentId?: string;
  contentHash?: string;
  /** Per-document manifest to mark done (knowledge-base flow), see the embed-batch handler. */
  manifestKey?: string;
  /** Staged write the chunks belong to (knowledge-base flow): invisible until the document version commits. */
  version?: string;
  /** Commit to apply once this batch is stored (single-batch documents of the optimizer). */
  commit?: DocumentCommit;
}

/** One batch as stored: the header, its position among its siblings, and its chunks. */
export interface ChunkBatch extends ChunkBatchHeader {
  format: typeof CHUNK_BATCH_FORMAT;
  /** 0-based position of this batch. */
  index: number;
  /** Number of batches written together. */
  total: number;
  chunks: AI4RAGChunk[];
}

const ChunkSchema = z.object({
  id: z.string().min(1),
  text: z.string(),
  metadata: z.looseObject({ document_id: z.string(), sequence_number: z.number().int() }),
});

/** Chunking options as they travel in messages and batches. */
export const ChunkingOptionsSchema = z.object({
  method: z.enum(['recursive', 'hybrid', 'fixed', 'semantic', 'hierarchical']),
  chunkSize: z.number().int(),
  chunkOverlap: z.number().int(),
  parentChunkSize: z.number().int().optional(),
  breakpoint: z.enum(['percentile', 'standard_deviation', 'gradient']).optional(),
  breakpointAmount: z.number().optional(),
  bufferSize: z.number().int().optional(),
  minChunkSize: z.number().int().optional(),
});

const ChunkBatchSchema = z.object({
  format: z.literal(CHUNK_BATCH_FORMAT),
  collection: z.string().min(1),
  embeddingModel: z.string().min(1),
  chunking: ChunkingOptionsSchema,
  documentId: z.string().optional(),
  contentHash: z.string().optional(),
  manifestKey: z.string().optional(),
  version: z.string().min(1).max(128).optional(),
  commit: z
    .object({
      record: z.object({
        documentId: z.string(),
        contentHash: z.string(),
        chunkCount: z.number().int(),
        updatedAt: z.string(),
        metadata: z.record(z.string(), z.unknown()).optional(),
      }),
      keepIds: z.array(z.string()),
    })
    .optional(),
  index: z.number().int().min(0),
  total: z.number().int().min(1),
  chunks: z.array(ChunkSchema).max(MAX_BATCH_CHUNKS),
});

/** Limits of {@link planChunkBatches}. */
export interface BatchLimits {
  maxChunks?: number;
  maxBytes?: number;
}

/**
 * Splits chunks into consecutive groups of at most `maxChunks` chunks and about `maxBytes` of JSON each (a single
 * chunk larger than `maxBytes` still gets a batch of its own). Pure, so the split is testable without storage.
 * @throws {ValidationError} when a limit is not a positive integer.
 * @example planChunkBatches(chunks, { maxChunks: 2 }).map((b) => b.length) // [2, 2, 1] for 5 chunks
 */
export function planChunkBatches(
  chunks: readonly AI4RAGChunk[],
  limits: BatchLimits = {},
): AI4RAGChunk[][] {
  const maxChunks = limits.maxChunks ?? MAX_BATCH_CHUNKS;
  const maxBytes = limits.maxBytes ?? MAX_BATCH_BYTES;
  for (const [name, v] of [
    ['maxChunks', maxChunks],
    ['maxBytes', maxBytes],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) {
      throw new ValidationError(`${name} must be a positive integer, got ${String(v)}`);
    }
  }
  if (maxChunks > MAX_BATCH_CHUNKS) {
    throw new ValidationError(`maxChunks must be at most ${MAX_BATCH_CHUNKS}, got ${maxChunks}`);
  }
  const out: AI4RAGChunk[][] = [];
  let current: AI4RAGChunk[] = [];
  let bytes = 0;
  for (const chunk of chunks) {
    const size = Buffer.byteLength(JSON.stringify(chunk), 'utf8') + 1;
    if (current.length > 0 && (current.length >= maxChunks || bytes + size > maxBytes)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(chunk);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** The key of batch `index` under `prefix`. */
export function batchKey(prefix: string, index: number): string {
  return `${prefix.replace(/\/+$/, '')}/${index}.json`;
}

/**
 * Writes chunks as batches `<prefix>/<n>.json` (n from 0) and returns their keys in order. Rewriting the same
 * chunks under the same prefix yields the same objects, so a retried chunk step is harmless.
 * @throws {ValidationError} for an empty collection or embedding model id.
 * @example
 * const keys = await writeChunkBatches(store, 'batches/ai4rag_kb/a.md/3f2c', header, chunks);
 */
export async function writeChunkBatches(
  store: ObjectStore,
  prefix: string,
  header: ChunkBatchHeader,
  chunks: AI4RAGChunk[],
  limits?: BatchLimits,
): Promise<string[]> {
  if (!header.collection || !header.embeddingModel) {
    throw new ValidationError('a chunk batch needs a collection and an embedding model id');
  }
  const groups = planChunkBatches(chunks, limits);
  const keys: string[] = [];
  for (const [index, group] of groups.entries()) {
    const key = batchKey(prefix, index);
    const batch: ChunkBatch = {
      format: CHUNK_BATCH_FORMAT,
      ...header,
      index,
      total: groups.length,
      chunks: group,
    };
    await putJson(store, key, batch);
    keys.push(key);
  }
  return keys;
}

/**
 * Reads and validates one batch.
 * @throws {NotFoundError} when the object is absent.
 * @throws {ValidationError} when it is not a chunk batch of this format.
 * @example const batch = await readChunkBatch(store, keys[0]);
 */
export async function readChunkBatch(store: ObjectStore, key: string): Promise<ChunkBatch> {
  const raw = await getJson<unknown>(store, key);
  const parsed = ChunkBatchSchema.safeParse(raw);
  if (!parsed.success) {
    const detail = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new ValidationError(`object '${key}' is not a chunk batch: ${detail}`, {
      cause: parsed.error,
    });
  }
  return parsed.data as ChunkBatch;
}
