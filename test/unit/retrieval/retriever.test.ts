import { describe, expect, it } from 'vitest';
import {
  mergeWindow,
  planWindows,
  Retriever,
  RetrieverError,
} from '../../../shared/src/retrieval/retriever.js';
import { MemoryStore, testChunk } from '../../support/memory-store.js';

function hit(doc: string, seq: number, score = 1) {
  return { ...testChunk(doc, seq, `${doc}-${seq}`), score };
}

describe('planWindows', () => {
  it('merges overlapping and touching windows per document, ordered by best hit', () => {
    // Prepare: hits d1#5 (rank 0), d2#1 (rank 1), d1#7 (rank 2), d1#12 (rank 3)
    const hits = [hit('d1', 5), hit('d2', 1), hit('d1', 7), hit('d1', 12)];
    // Act
    const plans = planWindows(hits, 1);
    // Assess: d1 [4,6] and [6,8] merge to [4,8]; [11,13] stays apart; d2 clamps to [1,2]
    expect(plans.map((p) => [p.documentId, p.from, p.to, p.rank])).toEqual([
      ['d1', 4, 8, 0],
      ['d2', 1, 2, 1],
      ['d1', 11, 13, 3],
    ]);
  });

  it('keeps the better-ranked hit of a merged window', () => {
    const plans = planWindows([hit('d', 9, 0.9), hit('d', 8, 0.5)], 1);
    expect(plans).toHaveLength(1);
    expect(plans[0]?.best.metadata.sequence_number).toBe(9);
    expect([plans[0]?.from, plans[0]?.to]).toEqual([7, 10]);
  });
});

describe('mergeWindow', () => {
  it('stitches recursive chunks by start index without repeating the overlap', () => {
    // Prepare: document text "The cat sat. The dog ran. The end." split with overlap
    const chunks = [
      { ...testChunk('d', 1, 'The cat sat. The dog', 0) },
      { ...testChunk('d', 2, 'The dog ran. The end.', 13) },
    ];
    const plan = planWindows([{ ...chunks[1]!, score: 1 }], 1)[0]!;
    // Act
    const merged = mergeWindow(plan, chunks);
    // Assess
    expect(merged.text).toBe('The cat sat. The dog ran. The end.');
    expect(merged.chunkIds).toEqual(['d#1', 'd#2']);
    expect(merged.metadata.window_start).toBe(1);
    expect(merged.metadata.window_end).toBe(2);
    expect(merged.score).toBe(1);
  });

  it('joins chunks without start index by a blank line', () => {
    const chunks = [testChunk('d', 1, 'A'), testChunk('d', 2, 'B')];
    const merged = mergeWindow(planWindows([{ ...chunks[0]!, score: 2 }], 1)[0]!, chunks);
    expect(merged.text).toBe('A\n\nB');
  });
});

describe('Retriever', () => {
  it('returns the store hits for simple retrieval', async () => {
    const store = new MemoryStore();
    await store.addChunks([testChunk('a', 1, 'alpha beta'), testChunk('b', 1, 'beta gamma')]);
    const hits = await new Retriever(store, { numberOfChunks: 1 }).retrieve('alpha beta');
    expect(hits.map((h) => h.id)).toEqual(['a#1']);
    expect(hits[0]?.chunkIds).toEqual(['a#1']);
  });

  it('expands a hit with its neighbours for window retrieval', async () => {
    // Prepare
    const store = new MemoryStore();
    await store.addChunks([
      testChunk('a', 1, 'one'),
      testChunk('a', 2, 'two needle'),
      testChunk('a', 3, 'three'),
      testChunk('a', 4, 'four'),
    ]);
    // Act
    const hits = await new Retriever(store, {
      numberOfChunks: 1,
      method: 'window',
      windowSize: 1,
    }).retrieve('needle');
    // Assess
    expect(hits).toHaveLength(1);
    expect(hits[0]?.text).toBe('one\n\ntwo needle\n\nthree');
    expect(hits[0]?.chunkIds).toEqual(['a#1', 'a#2', 'a#3']);
  });

  it.each([
    [{ numberOfChunks: 0 }, 'numberOfChunks must be a positive integer'],
    [{ numberOfChunks: 3, method: 'window' as const, windowSize: 0 }, 'needs windowSize > 0'],
    [{ numberOfChunks: 3, method: 'simple' as const, windowSize: 2 }, 'needs windowSize 0'],
    [
      { numberOfChunks: 3, method: 'window' as const, windowSize: 5 },
      'windowSize must be an integer in 0..4',
    ],
  ])('rejects %j', (options, message) => {
    expect(() => new Retriever(new MemoryStore(), options)).toThrow(RetrieverError);
    expect(() => new Retriever(new MemoryStore(), options)).toThrow(message);
  });
});
