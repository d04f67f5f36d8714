import type { AI4RAGChunk } from '../../shared/src/chunking/types.js';
import type {
  CollectionStats,
  DocumentCommit,
  DocumentRecord,
  EmbeddedChunk,
  MetadataFilter,
  SearchHit,
  SearchParams,
  VectorStore,
} from '../../shared/src/vectorstores/types.js';

/**
 * In-memory VectorStore fake for domain tests (retriever, ingest pipeline). Search ranks by the number of
 * query words a chunk contains (ties by id), which is enough to make rankings predictable.
 */
export class MemoryStore implements VectorStore {
  readonly collectionName = 'ai4rag_memory';
  readonly chunks = new Map<string, AI4RAGChunk>();
  readonly documents = new Map<string, DocumentRecord>();
  embedCalls = 0;
  failNextAdd: Error | undefined;

  async addChunks(chunks: AI4RAGChunk[]): Promise<number> {
    if (this.failNextAdd) {
      const error = this.failNextAdd;
      this.failNextAdd = undefined;
      throw error;
    }
    this.embedCalls += 1;
    return this.upsert(chunks.map((chunk) => ({ chunk, vector: [] })));
  }

  async upsert(records: EmbeddedChunk[]): Promise<number> {
    const seen = new Set<string>();
    for (const { chunk } of records) {
      if (seen.has(chunk.id)) continue;
      seen.add(chunk.id);
      this.chunks.set(chunk.id, chunk);
    }
    return seen.size;
  }

  async search(query: string, params: SearchParams): Promise<SearchHit[]> {
    const terms = query.toLowerCase().split(/\W+/).filter(Boolean);
    return [...this.chunks.values()]
      .map((c) => ({ c, s: terms.filter((t) => c.text.toLowerCase().includes(t)).length }))
      .filter((x) => x.s > 0)
      .sort((a, b) => b.s - a.s || a.c.id.localeCompare(b.c.id))
      .slice(0, params.k)
      .map(({ c, s }) => ({ id: c.id, text: c.text, metadata: c.metadata, score: s }));
  }

  async getChunksBySequence(documentId: string, from: number, to: number): Promise<SearchHit[]> {
    return [...this.chunks.values()]
      .filter((c) => c.metadata.document_id === documentId)
      .filter((c) => c.metadata.sequence_number >= from && c.metadata.sequence_number <= to)
      .sort((a, b) => a.metadata.sequence_number - b.metadata.sequence_number)
      .map((c) => ({ id: c.id, text: c.text, metadata: c.metadata }));
  }

  async deleteByDocument(documentId: string, options?: { keepIds?: string[] }): Promise<number> {
    const keep = new Set(options?.keepIds ?? []);
    let n = 0;
    for (const [id, c] of this.chunks) {
      if (c.metadata.document_id === documentId && !keep.has(id)) {
        this.chunks.delete(id);
        n += 1;
      }
    }
    if (!options?.keepIds) this.documents.delete(documentId);
    return n;
  }

  async deleteByFilter(filter: MetadataFilter): Promise<number> {
    let n = 0;
    for (const [id, c] of this.chunks) {
      if (Object.entries(filter).every(([k, v]) => c.metadata[k] === v)) {
        this.chunks.delete(id);
        n += 1;
      }
    }
    return n;
  }

  async putDocument(record: DocumentRecord): Promise<void> {
    this.documents.set(record.documentId, record);
  }

  async commitDocuments(entries: DocumentCommit[]): Promise<number> {
    let n = 0;
    for (const { record, keepIds } of entries) {
      n += await this.deleteByDocument(record.documentId, { keepIds });
      this.documents.set(record.documentId, record);
    }
    return n;
  }

  async getDocuments(documentIds: string[]): Promise<Map<string, DocumentRecord>> {
    const out = new Map<string, DocumentRecord>();
    for (const id of documentIds) {
      const record = this.documents.get(id);
      if (record) out.set(id, record);
    }
    return out;
  }

  async getDocument(documentId: string): Promise<DocumentRecord | undefined> {
    return this.documents.get(documentId);
  }

  async listDocuments(): Promise<DocumentRecord[]> {
    return [...this.documents.values()];
  }

  async stats(): Promise<CollectionStats> {
    return {
      collection: this.collectionName,
      documents: this.documents.size,
      chunks: this.chunks.size,
      dimension: 0,
      distance: 'cosine',
      embeddingModel: 'none',
      annIndex: false,
    };
  }

  async drop(): Promise<void> {
    this.chunks.clear();
    this.documents.clear();
  }

  async close(): Promise<void> {}
}

/** A chunk for tests (id derived from document and sequence; not the real SHA-256 id). */
export function testChunk(
  documentId: string,
  seq: number,
  text: string,
  startIndex?: number,
): AI4RAGChunk {
  return {
    id: `${documentId}#${seq}`,
    text,
    metadata: {
      document_id: documentId,
      sequence_number: seq,
      ...(startIndex !== undefined && { start_index: startIndex }),
    },
  };
}
