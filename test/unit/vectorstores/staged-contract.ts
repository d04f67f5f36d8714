import { hostname } from 'node:os';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { AI4RAGChunk } from '../../../shared/src/chunking/types.js';
import type {
  DocumentRecord,
  VectorStore,
  VersionedCommit,
} from '../../../shared/src/vectorstores/types.js';
import { type ContractStoreOptions, makeChunk } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';

/** A commit of `chunks` as document `documentId`. */
export function commitOf(
  documentId: string,
  chunks: readonly AI4RAGChunk[],
  extra: Partial<VersionedCommit> = {},
  hash = `hash-${chunks.length}`,
): VersionedCommit {
  const record: DocumentRecord = {
    documentId,
    contentHash: hash,
    chunkCount: chunks.length,
    updatedAt: new Date().toISOString(),
  };
  return { record, chunkIds: chunks.map((c) => c.id), ...extra };
}

/** Chunks of one document version: ids carry the version label so versions never share ids. */
export function versionChunks(documentId: string, label: string, n: number): AI4RAGChunk[] {
  return Array.from({ length: n }, (_, i) => ({
    ...makeChunk(documentId, i + 1, `${documentId} ${label} passage ${i + 1} about proteins`),
    id: `${documentId}@${label}#${i + 1}`,
  }));
}

/** Ids of every visible chunk of a document (through the read path users see). */
async function visibleIds(store: VectorStore, documentId: string): Promise<string[]> {
  const hits = await store.getChunksBySequence(documentId, 0, 1_000_000);
  return hits.map((h) => h.id).sort();
}

async function searchIds(store: VectorStore, query: string): Promise<string[]> {
  const hits = await store.search(query, { k: 50 });
  return hits.map((h) => h.id).sort();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Staged-write contract (invariants I1–I4 of ingestion): every adapter that implements `beginWrite` /
 * `finishWrite` runs it.
 */
export function runStagedWriteContract(
  label: string,
  makeStore: (opts: ContractStoreOptions) => Promise<VectorStore>,
  cleanup?: () => Promise<void>,
): void {
  describe(`staged writes: ${label}`, () => {
    const runId = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
    let counter = 0;
    const opened: VectorStore[] = [];
    const open = async (): Promise<VectorStore> => {
      counter += 1;
      const store = await makeStore({
        collectionName: `ai4rag_sw_${runId}_${counter}`,
        embedder: createHashEmbedder(),
      });
      opened.push(store);
      return store;
    };
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
    });
    afterAll(async () => {
      await cleanup?.();
    });

    it('keeps staged chunks invisible to search, documents and stats until the write commits', async () => {
      // Prepare
      const store = await open();
      const v = await store.beginWrite();
      const chunks = versionChunks('d1', 'a', 3);
      await store.addChunks(chunks, { version: v });
      // Assess: nothing of d1 is visible yet
      expect(await searchIds(store, 'd1 passage about proteins')).toEqual([]);
      expect(await visibleIds(store, 'd1')).toEqual([]);
      expect(await store.getDocument('d1')).toBeUndefined();
      expect((await store.stats()).chunks).toBe(0);
      // Act
      const outcome = await store.finishWrite(v, [commitOf('d1', chunks)]);
      // Assess
      expect(outcome).toEqual({ committed: ['d1'], refused: [], chunksDeleted: 0 });
      expect(await visibleIds(store, 'd1')).toEqual(chunks.map((c) => c.id).sort());
      expect(await searchIds(store, 'd1 passage about proteins')).toEqual(
        chunks.map((c) => c.id).sort(),
      );
      const record = await store.getDocument('d1');
      expect(record?.chunkCount).toBe(3);
      expect(record?.version).toBe(v);
      expect((await store.stats()).chunks).toBe(3);
      expect((await store.checkIntegrity()).clean).toBe(true);
    });

    it('serves the old version while a new one is staged, then exactly the new one', async () => {
      // Prepare
      const store = await open();
      const v1 = await store.beginWrite();
      const old = versionChunks('d1', 'old', 3);
      await store.addChunks(old, { version: v1 });
      await store.finishWrite(v1, [commitOf('d1', old)]);
      const v2 = await store.beginWrite();
      // One id shared with the old version: versions stage their own rows.
      const next = [old[0] as AI4RAGChunk, ...versionChunks('d1', 'new', 1)];
      await store.addChunks(next, { version: v2 });
      // Assess: the old version, complete and alone
      expect(await visibleIds(store, 'd1')).toEqual(old.map((c) => c.id).sort());
      expect((await store.stats()).chunks).toBe(3);
      // Act
      const outcome = await store.finishWrite(v2, [commitOf('d1', next)]);
      // Assess
      expect(outcome.committed).toEqual(['d1']);
      expect(outcome.chunksDeleted).toBe(3);
      expect(await visibleIds(store, 'd1')).toEqual(next.map((c) => c.id).sort());
      expect((await store.stats()).chunks).toBe(2);
      expect((await store.getDocument('d1'))?.chunkCount).toBe(2);
      expect((await store.checkIntegrity()).clean).toBe(true);
    });

    it.each([
      ['A then B', ['a', 'b']],
      ['B then A', ['b', 'a']],
    ] as const)(
      'two writers of one document: the last commit wins, complete (%s)',
      async (_name, order) => {
        // Prepare
        const store = await open();
        const versions: Record<string, string> = {};
        const chunks: Record<string, AI4RAGChunk[]> = {
          a: versionChunks('d1', 'a', 4),
          b: versionChunks('d1', 'b', 2),
        };
        for (const w of ['a', 'b']) versions[w] = await store.beginWrite();
        // Interleaved staging
        await store.addChunks((chunks.a as AI4RAGChunk[]).slice(0, 2), { version: versions.a });
        await store.addChunks(chunks.b as AI4RAGChunk[], { version: versions.b });
        await store.addChunks((chunks.a as AI4RAGChunk[]).slice(2), { version: versions.a });
        // Act
        for (const w of order) {
          const outcome = await store.finishWrite(versions[w] as string, [
            commitOf('d1', chunks[w] as AI4RAGChunk[]),
          ]);
          expect(outcome.committed).toEqual(['d1']);
        }
        // Assess
        const last = order[1];
        expect(await visibleIds(store, 'd1')).toEqual(
          (chunks[last] as AI4RAGChunk[]).map((c) => c.id).sort(),
        );
        expect((await store.getDocument('d1'))?.version).toBe(versions[last]);
        expect((await store.stats()).chunks).toBe((chunks[last] as AI4RAGChunk[]).length);
        const report = await store.checkIntegrity();
        expect(report.clean).toBe(true);
        expect(report.orphanChunks).toBe(0);
      },
    );

    it('refuses an incomplete document without touching its previous version or its neighbours', async () => {
      // Prepare
      const store = await open();
      const v1 = await store.beginWrite();
      const old = versionChunks('d1', 'old', 2);
      await store.addChunks(old, { version: v1 });
      await store.finishWrite(v1, [commitOf('d1', old)]);
      const v2 = await store.beginWrite();
      const partial = versionChunks('d1', 'new', 3);
      const other = versionChunks('d2', 'new', 2);
      await store.addChunks([...partial.slice(0, 2), ...other], { version: v2 });
      // Act
      const outcome = await store.finishWrite(v2, [commitOf('d1', partial), commitOf('d2', other)]);
      // Assess
      expect(outcome.committed).toEqual(['d2']);
      expect(outcome.refused).toEqual([
        { documentId: 'd1', reason: 'incomplete', message: expect.stringContaining('2 of 3') },
      ]);
      expect(await visibleIds(store, 'd1')).toEqual(old.map((c) => c.id).sort());
      expect((await store.getDocument('d1'))?.chunkCount).toBe(2);
      expect(await visibleIds(store, 'd2')).toEqual(other.map((c) => c.id).sort());
      const report = await store.checkIntegrity();
      expect(report).toMatchObject({ clean: true, orphanChunks: 0, documents: 2, chunks: 4 });
    });

    it('ends a write on finish: staged chunks of documents not committed are removed', async () => {
      // Prepare
      const store = await open();
      const v = await store.beginWrite();
      await store.addChunks([...versionChunks('d1', 'a', 2), ...versionChunks('d2', 'a', 2)], {
        version: v,
      });
      // Act
      const outcome = await store.finishWrite(v, [commitOf('d1', versionChunks('d1', 'a', 2))]);
      // Assess
      expect(outcome).toEqual({ committed: ['d1'], refused: [], chunksDeleted: 2 });
      const report = await store.checkIntegrity();
      expect(report).toMatchObject({ clean: true, orphanChunks: 0, chunks: 2, liveWrites: [] });
      await expect(store.upsert([], { version: v })).resolves.toBe(0);
      await expect(store.addChunks(versionChunks('d3', 'a', 1), { version: v })).rejects.toThrow(
        /write .* (ended|expired|unknown)/,
      );
    });

    it('a redelivery after the commit can neither re-begin nor hide the committed version', async () => {
      // Prepare
      const store = await open();
      const chunks = versionChunks('d1', 'a', 2);
      const v = await store.beginWrite({ version: 'd1.once' });
      await store.addChunks(chunks, { version: v });
      await store.finishWrite(v, [commitOf('d1', chunks)]);
      // Act
      const again = store.beginWrite({ version: 'd1.once' });
      // Assess
      await expect(again).rejects.toThrow(/already ended/);
      await expect(store.abortWrite(v)).resolves.toBe(0);
      expect(await visibleIds(store, 'd1')).toEqual(chunks.map((c) => c.id).sort());
      expect((await store.checkIntegrity()).clean).toBe(true);
    });

    it('aborts a write: its staged chunks go, the committed version stays', async () => {
      // Prepare
      const store = await open();
      const v1 = await store.beginWrite();
      const old = versionChunks('d1', 'old', 2);
      await store.addChunks(old, { version: v1 });
      await store.finishWrite(v1, [commitOf('d1', old)]);
      const v2 = await store.beginWrite();
      await store.addChunks(versionChunks('d1', 'new', 5), { version: v2 });
      // Act
      const removed = await store.abortWrite(v2);
      // Assess
      expect(removed).toBe(5);
      expect(await visibleIds(store, 'd1')).toEqual(old.map((c) => c.id).sort());
      expect((await store.checkIntegrity()).clean).toBe(true);
    });

    it('keeps a deleted document deleted when an ingest that read it before finishes later', async () => {
      // Prepare
      const store = await open();
      const v1 = await store.beginWrite();
      const old = versionChunks('d1', 'old', 2);
      await store.addChunks(old, { version: v1 });
      await store.finishWrite(v1, [commitOf('d1', old)]);
      const readAt = new Date().toISOString();
      await sleep(5);
      const v2 = await store.beginWrite();
      const next = versionChunks('d1', 'new', 2);
      await store.addChunks(next, { version: v2 });
      // Act: the file is deleted (prune) while v2 is in flight
      const deleted = await store.deleteDocument('d1');
      const outcome = await store.finishWrite(v2, [commitOf('d1', next, { readAt })]);
      // Assess
      expect(deleted).toBe(2);
      expect(outcome.committed).toEqual([]);
      expect(outcome.refused).toEqual([
        { documentId: 'd1', reason: 'deleted', message: expect.any(String) },
      ]);
      expect(await store.getDocument('d1')).toBeUndefined();
      expect(await store.listDocuments()).toEqual([]);
      expect(await visibleIds(store, 'd1')).toEqual([]);
      expect(await searchIds(store, 'd1 passage about proteins')).toEqual([]);
      expect(await store.checkIntegrity()).toMatchObject({ clean: true, chunks: 0, documents: 0 });
      // A later ingest (read after the deletion) brings the document back.
      const v3 = await store.beginWrite();
      await store.addChunks(next, { version: v3 });
      const again = await store.finishWrite(v3, [
        commitOf('d1', next, { readAt: new Date().toISOString() }),
      ]);
      expect(again.committed).toEqual(['d1']);
    });

    it('orders S3 events by sequencer: older uploads and removals never win', async () => {
      // Prepare
      const store = await open();
      const newer = versionChunks('d1', 'newer', 2);
      const older = versionChunks('d1', 'older', 3);
      const vNew = await store.beginWrite({ version: 'd1.00B' });
      await store.addChunks(newer, { version: vNew });
      await store.finishWrite(vNew, [commitOf('d1', newer, { sequencer: '00B' })]);
      const vOld = await store.beginWrite({ version: 'd1.0A' });
      await store.addChunks(older, { version: vOld });
      // Act
      const late = await store.finishWrite(vOld, [commitOf('d1', older, { sequencer: '0A' })]);
      const staleRemoval = await store.deleteDocument('d1', { sequencer: '0A' });
      // Assess
      expect(late.refused.map((r) => r.reason)).toEqual(['superseded']);
      expect(staleRemoval).toBe(-1);
      expect(await visibleIds(store, 'd1')).toEqual(newer.map((c) => c.id).sort());
      // A newer removal deletes; an upload older than it, arriving late, stays out.
      expect(await store.deleteDocument('d1', { sequencer: '0C0' })).toBe(2);
      const vLate = await store.beginWrite({ version: 'd1.0BB' });
      await store.addChunks(older, { version: vLate });
      const lateUpload = await store.finishWrite(vLate, [
        commitOf('d1', older, { sequencer: '0BB' }),
      ]);
      expect(lateUpload.refused.map((r) => r.reason)).toEqual(['deleted']);
      expect(await store.getDocument('d1')).toBeUndefined();
      expect((await store.checkIntegrity()).clean).toBe(true);
    });

    it('renews a write begun again with the same version (redelivery) and stages idempotently', async () => {
      // Prepare
      const store = await open();
      const chunks = versionChunks('d1', 'a', 3);
      const v = await store.beginWrite({ version: 'd1.v1' });
      await store.addChunks(chunks, { version: v });
      // Act: a redelivered batch
      expect(await store.beginWrite({ version: 'd1.v1' })).toBe('d1.v1');
      await store.addChunks(chunks.slice(1), { version: v });
      const outcome = await store.finishWrite(v, [commitOf('d1', chunks)]);
      // Assess
      expect(outcome.committed).toEqual(['d1']);
      expect((await store.stats()).chunks).toBe(3);
    });

    it('sweeps the write of a dead local process at once, and refuses its late commit', async () => {
      // Prepare: a write owned by a pid that does not run on this host
      const store = await open();
      const dead = await store.beginWrite({ owner: `${hostname()}:4194303` });
      await store.addChunks(versionChunks('d1', 'dead', 3), { version: dead });
      const before = await store.checkIntegrity();
      expect(before.expiredWrites.map((w) => w.version)).toEqual([dead]);
      expect(before.clean).toBe(false);
      // Act: the next writer sweeps it
      await store.beginWrite();
      // Assess
      const after = await store.checkIntegrity();
      expect(after.expiredWrites).toEqual([]);
      expect(after.orphanChunks).toBe(0);
      const late = await store.finishWrite(dead, [commitOf('d1', versionChunks('d1', 'dead', 3))]);
      expect(late.refused.map((r) => r.reason)).toEqual(['expired']);
      expect(await store.getDocument('d1')).toBeUndefined();
    });

    it('expires a write whose lease lapsed; writing to it then fails', async () => {
      // Prepare
      const store = await open();
      const v = await store.beginWrite({ leaseSeconds: 0.3 });
      await store.addChunks(versionChunks('d1', 'a', 2), { version: v });
      await sleep(600);
      // Act
      await store.beginWrite();
      // Assess
      await expect(store.addChunks(versionChunks('d1', 'b', 1), { version: v })).rejects.toThrow(
        /write .* (ended|expired|unknown)/,
      );
      const outcome = await store.finishWrite(v, [commitOf('d1', versionChunks('d1', 'a', 2))]);
      expect(outcome.refused.map((r) => r.reason)).toEqual(['expired']);
      expect(await store.checkIntegrity()).toMatchObject({ clean: true, orphanChunks: 0 });
    });

    it('check --repair sweeps lapsed writes', async () => {
      // Prepare
      const store = await open();
      const v = await store.beginWrite({ leaseSeconds: 0.3 });
      await store.addChunks(versionChunks('d1', 'a', 2), { version: v });
      await sleep(600);
      // Act
      const report = await store.checkIntegrity({ repair: true });
      // Assess
      expect(report.expiredWrites.map((w) => w.chunks)).toEqual([2]);
      expect(report.repaired).toMatchObject({ writesSwept: 1, chunksDeleted: 2 });
      expect(await store.checkIntegrity()).toMatchObject({
        clean: true,
        orphanChunks: 0,
        expiredWrites: [],
      });
    });
  });
}
