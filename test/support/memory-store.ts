import type { AI4RAGChunk } from '../../shared/src/chunking/types.js';
import { WriteEndedError } from '../../shared/src/vectorstores/errors.js';
import {
  matchesMetadataFilter,
  parseMetadataFilter,
} from '../../shared/src/vectorstores/filter.js';
import {
  checkLease,
  checkVersion,
  compareSequencers,
  DEFAULT_LEASE_SECONDS,
  isDeadLocalOwner,
  localOwner,
  newVersion,
} from '../../shared/src/vectorstores/staged.js';
import type {
  BeginWriteOptions,
  CollectionStats,
  CommitRefusal,
  DeleteDocumentOptions,
  DocumentCommit,
  DocumentRecord,
  EmbeddedChunk,
  IntegrityReport,
  MetadataFilter,
  SearchHit,
  SearchParams,
  VectorStore,
  VersionedCommit,
  WriteOutcome,
} from '../../shared/src/vectorstores/types.js';

/** A staged write held in memory: its lease and its chunks (by id). */
interface MemoryWrite {
  owner: string;
  leaseMs: number;
  expiresAt: number;
  staged: Map<string, AI4RAGChunk>;
}

/** A deleted document: when, and the sequencer of the removal (or of the record it replaced). */
interface Tombstone {
  deletedAt: number;
  sequencer?: string;
}

/**
 * In-memory VectorStore fake for domain tests (retriever, ingest pipeline). Search ranks by the number of
 * query words a chunk contains (ties by id), which is enough to make rankings predictable.
 *
 * `chunks` and `documents` hold only what readers see (committed chunks and records); staged writes keep their
 * chunks apart until `finishWrite` swaps a document's chunks and record in one step (memory needs no locks), so
 * the staged-write contract holds trivially: no orphans, no mismatches but those direct writes make.
 */
export class MemoryStore implements VectorStore {
  readonly collectionName = 'ai4rag_memory';
  readonly chunks = new Map<string, AI4RAGChunk>();
  readonly documents = new Map<string, DocumentRecord>();
  readonly tombstones = new Map<string, Tombstone>();
  readonly writes = new Map<string, MemoryWrite>();
  /** Versions of writes that ended (finished, aborted, swept): they cannot be begun again. */
  readonly ended = new Set<string>();
  embedCalls = 0;
  failNextAdd: Error | undefined;

  async addChunks(chunks: AI4RAGChunk[], options: { version?: string } = {}): Promise<number> {
    if (this.failNextAdd) {
      const error = this.failNextAdd;
      this.failNextAdd = undefined;
      throw error;
    }
    if (options.version !== undefined && chunks.length > 0) this.liveWrite(options.version);
    this.embedCalls += 1;
    return this.upsert(
      chunks.map((chunk) => ({ chunk, vector: [] })),
      options,
    );
  }

  async upsert(records: EmbeddedChunk[], options: { version?: string } = {}): Promise<number> {
    const seen = new Set<string>();
    const unique = records.filter(({ chunk }) => !seen.has(chunk.id) && seen.add(chunk.id));
    if (unique.length === 0) return 0;
    const target =
      options.version === undefined ? this.chunks : this.liveWrite(options.version, true).staged;
    for (const { chunk } of unique) target.set(chunk.id, chunk);
    return unique.length;
  }

  /** The live write of `version` (renewed when asked); throws when it ended, never began or expired. */
  private liveWrite(version: string, renew = false): MemoryWrite {
    const write = this.writes.get(checkVersion(version));
    if (write === undefined) throw new WriteEndedError(`write ${version} ended or unknown`);
    if (write.expiresAt < Date.now()) throw new WriteEndedError(`write ${version} expired`);
    if (renew) write.expiresAt = Date.now() + write.leaseMs;
    return write;
  }

  private static lapsed(write: MemoryWrite, now: number): boolean {
    return write.expiresAt < now || isDeadLocalOwner(write.owner);
  }

  async beginWrite(options: BeginWriteOptions = {}): Promise<string> {
    const version = options.version === undefined ? newVersion() : checkVersion(options.version);
    const leaseMs = checkLease(options.leaseSeconds ?? DEFAULT_LEASE_SECONDS) * 1000;
    const now = Date.now();
    for (const [v, w] of this.writes) if (MemoryStore.lapsed(w, now)) this.end(v);
    if (this.ended.has(version)) {
      throw new WriteEndedError(`write ${version} has already ended; it cannot be begun again`);
    }
    const existing = this.writes.get(version);
    const owner = options.owner ?? localOwner();
    if (existing) Object.assign(existing, { owner, leaseMs, expiresAt: now + leaseMs });
    else this.writes.set(version, { owner, leaseMs, expiresAt: now + leaseMs, staged: new Map() });
    return version;
  }

  private end(version: string): void {
    this.writes.delete(version);
    this.ended.add(version);
  }

  /** Why an entry may not be committed (the same rules as the real stores), or undefined. */
  private refusal(
    entry: VersionedCommit,
    staged: ReadonlyMap<string, AI4RAGChunk>,
  ): { reason: CommitRefusal; message: string } | undefined {
    const id = entry.record.documentId;
    const tomb = this.tombstones.get(id);
    const stored = tomb ? tomb.sequencer : this.documents.get(id)?.sequencer;
    if (entry.sequencer !== undefined && stored !== undefined) {
      if (compareSequencers(entry.sequencer, stored) < 0) {
        return tomb
          ? { reason: 'deleted', message: `${id}: removed by a later event` }
          : { reason: 'superseded', message: `${id}: a newer upload is stored` };
      }
    } else if (tomb && entry.readAt !== undefined && Date.parse(entry.readAt) < tomb.deletedAt) {
      return { reason: 'deleted', message: `${id}: deleted after this ingest read it` };
    }
    const mine = [...staged.values()].filter((c) => c.metadata.document_id === id);
    const have = entry.chunkIds.filter((c) => staged.get(c)?.metadata.document_id === id).length;
    if (have !== entry.chunkIds.length || mine.length !== have) {
      return {
        reason: 'incomplete',
        message: `${id}: ${have} of ${entry.chunkIds.length} chunks staged`,
      };
    }
    return undefined;
  }

  async finishWrite(version: string, entries: VersionedCommit[]): Promise<WriteOutcome> {
    const outcome: WriteOutcome = { committed: [], refused: [], chunksDeleted: 0 };
    const write = this.writes.get(checkVersion(version));
    if (write === undefined || write.expiresAt < Date.now()) {
      if (write) {
        outcome.chunksDeleted += write.staged.size;
        this.end(version);
      }
      for (const e of entries) {
        const id = e.record.documentId;
        if (this.documents.get(id)?.version === version) outcome.committed.push(id);
        else outcome.refused.push({ documentId: id, reason: 'expired', message: `${id}: expired` });
      }
      return outcome;
    }
    this.end(version);
    const taken = new Set<string>();
    for (const e of entries) {
      const id = e.record.documentId;
      const refusal = this.refusal(e, write.staged);
      if (refusal) {
        outcome.refused.push({ documentId: id, ...refusal });
        continue;
      }
      outcome.chunksDeleted += this.removeChunks(id);
      for (const c of e.chunkIds) {
        this.chunks.set(c, write.staged.get(c) as AI4RAGChunk);
        taken.add(c);
      }
      const sequencer = e.sequencer ?? e.record.sequencer ?? this.documents.get(id)?.sequencer;
      this.documents.set(id, { ...e.record, version, ...(sequencer ? { sequencer } : {}) });
      this.tombstones.delete(id);
      outcome.committed.push(id);
    }
    outcome.chunksDeleted += [...write.staged.keys()].filter((c) => !taken.has(c)).length;
    return outcome;
  }

  async abortWrite(version: string): Promise<number> {
    const write = this.writes.get(checkVersion(version));
    if (write === undefined) return 0;
    this.end(version);
    return write.staged.size;
  }

  private removeChunks(documentId: string, keep: ReadonlySet<string> = new Set()): number {
    let n = 0;
    for (const [id, c] of this.chunks) {
      if (c.metadata.document_id === documentId && !keep.has(id)) {
        this.chunks.delete(id);
        n += 1;
      }
    }
    return n;
  }

  async deleteDocument(documentId: string, options: DeleteDocumentOptions = {}): Promise<number> {
    const stored =
      this.tombstones.get(documentId)?.sequencer ?? this.documents.get(documentId)?.sequencer;
    if (
      options.sequencer !== undefined &&
      stored !== undefined &&
      compareSequencers(options.sequencer, stored) < 0
    ) {
      return -1;
    }
    const n = this.removeChunks(documentId);
    this.documents.delete(documentId);
    const sequencer = options.sequencer ?? stored;
    this.tombstones.set(documentId, {
      deletedAt: Date.now(),
      ...(sequencer !== undefined ? { sequencer } : {}),
    });
    return n;
  }

  async checkIntegrity(options: { repair?: boolean } = {}): Promise<IntegrityReport> {
    const now = Date.now();
    const stored = new Map<string, number>();
    for (const c of this.chunks.values()) {
      const d = c.metadata.document_id;
      stored.set(d, (stored.get(d) ?? 0) + 1);
    }
    const mismatched = [...this.documents.values()]
      .filter((r) => (stored.get(r.documentId) ?? 0) !== r.chunkCount)
      .map((r) => ({
        documentId: r.documentId,
        recorded: r.chunkCount,
        stored: stored.get(r.documentId) ?? 0,
      }));
    const live = [...this.writes].filter(([, w]) => !MemoryStore.lapsed(w, now));
    const expired = [...this.writes].filter(([, w]) => MemoryStore.lapsed(w, now));
    const report: IntegrityReport = {
      collection: this.collectionName,
      documents: this.documents.size,
      chunks: this.chunks.size,
      orphanChunks: 0,
      mismatched,
      liveWrites: live.map(([version, w]) => ({
        version,
        owner: w.owner,
        expiresAt: new Date(w.expiresAt).toISOString(),
        chunks: w.staged.size,
      })),
      expiredWrites: expired.map(([version, w]) => ({
        version,
        owner: w.owner,
        chunks: w.staged.size,
      })),
      clean: mismatched.length === 0 && expired.length === 0,
    };
    if (options.repair !== true) return report;
    let chunksDeleted = 0;
    for (const [version, w] of expired) {
      chunksDeleted += w.staged.size;
      this.end(version);
    }
    for (const m of mismatched) {
      const r = this.documents.get(m.documentId) as DocumentRecord;
      this.documents.set(m.documentId, { ...r, chunkCount: m.stored, contentHash: '' });
    }
    return {
      ...report,
      repaired: { chunksDeleted, writesSwept: expired.length, recordsFixed: mismatched.length },
    };
  }

  async search(query: string, params: SearchParams): Promise<SearchHit[]> {
    const terms = query.toLowerCase().split(/\W+/).filter(Boolean);
    const filter = parseMetadataFilter(params.filter ?? {});
    return [...this.chunks.values()]
      .filter((c) => matchesMetadataFilter(filter, c.metadata))
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
    if (!options?.keepIds) return this.deleteDocument(documentId);
    return this.removeChunks(documentId, new Set(options.keepIds));
  }

  async deleteByFilter(filter: MetadataFilter): Promise<number> {
    let n = 0;
    const f = parseMetadataFilter(filter, { nonEmpty: true });
    for (const [id, c] of this.chunks) {
      if (matchesMetadataFilter(f, c.metadata)) {
        this.chunks.delete(id);
        n += 1;
      }
    }
    return n;
  }

  async putDocument(record: DocumentRecord): Promise<void> {
    this.documents.set(record.documentId, record);
    this.tombstones.delete(record.documentId);
  }

  async commitDocuments(entries: DocumentCommit[]): Promise<number> {
    let n = 0;
    for (const { record, keepIds } of entries) {
      n += await this.deleteByDocument(record.documentId, { keepIds });
      await this.putDocument(record);
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
    this.tombstones.clear();
    this.writes.clear();
    this.ended.clear();
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
