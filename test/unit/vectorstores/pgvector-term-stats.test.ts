import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FeatureHashEmbedder } from '../../../shared/src/embeddings/feature-hash.js';
import { buildTermStats } from '../../../shared/src/generation/term-stats.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite, type PgliteSqlClient } from '../../../shared/src/vectorstores/sql-client.js';

const TEXTS = [
  'The lock at Halvorsen opens at six in the morning.',
  'Barges wait at the lock when the river is high.',
  'Expense claims above 500 euros need a director.',
];

describe('PgVectorStore.termStats', () => {
  let client: PgliteSqlClient;
  let store: PgVectorStore;

  beforeAll(async () => {
    client = await openPglite({});
    store = await PgVectorStore.create({
      client,
      embedder: new FeatureHashEmbedder({ dimension: 64 }),
      collectionName: 'ai4rag_term_stats',
    });
    await store.addChunks(
      TEXTS.map((text, i) => ({
        id: `c${i}`,
        text,
        metadata: { document_id: `d${i}`, sequence_number: 1 },
      })),
    );
  });
  afterAll(async () => {
    await store?.close();
    await client?.close();
  });

  it('gives the same idf as statistics counted over the chunk texts', async () => {
    // Prepare
    const expected = buildTermStats(TEXTS);

    // Act
    const stats = await store.termStats();

    // Assess
    expect(stats.documents).toBe(3);
    for (const term of ['lock', 'barg', 'expens', 'halvorsen', 'mongolia']) {
      expect(stats.idf(term)).toBeCloseTo(expected.idf(term), 12);
    }
    expect(stats.idf('lock')).toBeLessThan(stats.idf('barg'));
    expect(stats.idf('mongolia')).toBe(Math.log(1 + 3.5 / 0.5));
  });
});
