/**
 * `npm run bench -- --memfs [--count N] [--rounds R]`: an in-memory PGlite collection written with MEMFS's own
 * file growth and with the amortized growth `openPglite` installs (shared/src/vectorstores/pglite-memfs.ts),
 * alternating, R rounds (default 3) of N chunks (default 8,000; synthetic text over a 5,000-word vocabulary,
 * 384-dimensional vectors, the same in every run). Prints each side's median upsert time, the ratio, and whether
 * both sides return the same keyword and vector top 10.
 */

import type { Embedder } from '../shared/src/embeddings/types.js';
import { mulberry32 } from '../shared/src/util/random.js';
import { PgVectorStore } from '../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite } from '../shared/src/vectorstores/sql-client.js';
import type { EmbeddedChunk } from '../shared/src/vectorstores/types.js';

const DIM = 384;

function argValue(argv: readonly string[], name: string, fallback: number): number {
  const i = argv.indexOf(name);
  if (i < 0) return fallback;
  const value = Number(argv[i + 1]);
  if (!Number.isInteger(value) || value <= 0) {
    throw new Error(`${name} takes a positive integer, got ${argv[i + 1] ?? 'nothing'}`);
  }
  return value;
}

/** The corpus: `count` chunks of 120 words each, skewed to the vocabulary's start, 16 per document. */
function corpus(count: number): { records: EmbeddedChunk[]; query: number[]; vocab: string[] } {
  const rand = mulberry32(7);
  const vocab = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}x${(i * 7919) % 977}`);
  const vector = () => Array.from({ length: DIM }, () => rand() - 0.5);
  const records = Array.from({ length: count }, (_, i) => ({
    chunk: {
      id: `c${i}`,
      text: Array.from(
        { length: 120 },
        () => vocab[Math.floor(rand() * rand() * vocab.length)] as string,
      ).join(' '),
      metadata: { document_id: `d${i >> 4}`, sequence_number: i & 15 },
    },
    vector: vector(),
  }));
  return { records: records as unknown as EmbeddedChunk[], query: vector(), vocab };
}

export async function runMemfs(argv: readonly string[]): Promise<void> {
  const count = argValue(argv, '--count', 8000);
  const rounds = argValue(argv, '--rounds', 3);
  const { records, query, vocab } = corpus(count);
  const embedder = {
    modelId: 'bench-fixed',
    dimension: DIM,
    embedDocuments: async (texts: string[]) => texts.map(() => query),
    embedQuery: async () => query,
  } as unknown as Embedder;
  const times: Record<'stock' | 'amortized', number[]> = { stock: [], amortized: [] };
  const tops: Record<'stock' | 'amortized', string> = { stock: '', amortized: '' };
  // Loads PGlite's WASM once, so neither side pays it.
  await (await openPglite({})).close();
  for (let i = 0; i < rounds * 2; i++) {
    const side = i % 2 === 0 ? 'stock' : 'amortized';
    const client = await openPglite({ amortizedGrowth: side === 'amortized' });
    try {
      const store = await PgVectorStore.create({
        client,
        embedder,
        collectionName: 'ai4rag_bench_memfs',
      });
      const t0 = performance.now();
      await store.upsert(records);
      times[side].push((performance.now() - t0) / 1000);
      const keyword = await store.keywordSearch(`${vocab[3]} ${vocab[40]}`, { k: 10 });
      const vector = await store.search('q', { k: 10 });
      tops[side] = [...keyword, { id: '|' }, ...vector].map((h) => h.id).join(',');
      await store.close();
    } finally {
      await client.close();
    }
  }
  const median = (xs: number[]) =>
    [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const stock = median(times.stock);
  const amortized = median(times.amortized);
  const fmt = (x: number) => x.toFixed(2);
  console.log(
    `memfs   upsert ${count} chunks into an in-memory PGlite collection: MEMFS growth ${fmt(stock)} s, amortized ${fmt(amortized)} s (×${fmt(stock / amortized)} faster; medians of ${rounds}, alternating; runs ${times.stock.map(fmt).join('/')} vs ${times.amortized.map(fmt).join('/')})`,
  );
  console.log(
    `        same keyword and vector top 10 on both sides: ${tops.stock === tops.amortized ? 'yes' : 'NO'}`,
  );
}
