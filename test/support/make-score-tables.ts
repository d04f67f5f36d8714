/**
 * Writes the synthetic RAG-like score tables used to choose DEFAULT_OPTIMIZER
 * (test/fixtures/optimizer/*.json). Each score = additive main effects + a few small interactions +
 * seeded Gaussian noise, rounded to 4 decimals. Run: `npx tsx test/support/make-score-tables.ts`.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ModelRef } from '#shared/optimizer/search-space.js';
import { createSearchSpace, defaultSearchSpace } from '#shared/optimizer/search-space.js';
import { mulberry32 } from '#shared/util/random.js';

type Config = Record<string, unknown>;
type Effects = (c: Config) => number;

function gaussian(rand: () => number): () => number {
  return () => {
    const u = Math.max(rand(), 1e-12);
    const v = rand();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
}

function retrievalMode(c: Config): string {
  return c.search_mode === 'vector' ? 'vector' : String(c.ranker_strategy);
}

function model(c: Config, key: string): string {
  return (c[key] as ModelRef).modelId;
}

function table(
  name: string,
  description: string,
  space: { foundationModels: ModelRef[]; embeddingModels: ModelRef[] },
  effects: Effects,
  noise: number,
  seed: number,
): void {
  const combos = createSearchSpace(defaultSearchSpace(space)).combinations();
  const normal = gaussian(mulberry32(seed));
  const rows = combos.map((config) => ({
    config,
    score: Math.round((effects(config) + noise * normal()) * 10_000) / 10_000,
  }));
  const out = fileURLToPath(new URL(`../fixtures/optimizer/${name}.json`, import.meta.url));
  writeFileSync(out, `${JSON.stringify({ description, rows }, null, 1)}\n`);
  const best = Math.max(...rows.map((r) => r.score));
  console.log(
    `${name}: ${rows.length} rows, best ${best} (x${rows.filter((r) => r.score === best).length})`,
  );
}

const one = {
  foundationModels: [{ modelId: 'local/extractive-v1' }],
  embeddingModels: [{ modelId: 'local/feature-hash-v1-384', contextLength: 8192 }],
};
const two = {
  foundationModels: [{ modelId: 'fm-small' }, { modelId: 'fm-large' }],
  embeddingModels: [
    { modelId: 'em-small', contextLength: 8192 },
    { modelId: 'em-large', contextLength: 8192 },
  ],
};

const pick = (m: Record<string, number>, k: unknown) => m[String(k)] ?? 0;

table(
  'default72-additive',
  '72-combo default space; strong main effects (k, chunk size, retrieval mode), tiny interactions, noise sd 0.008',
  one,
  (c) =>
    0.45 +
    pick({ 512: 0, 1024: 0.04, 2048: 0.015 }, c.chunk_size) +
    pick({ 0: 0, 128: 0.015, 256: 0.01 }, c.chunk_overlap) +
    pick({ recursive: 0.01, hybrid: 0.025 }, c.chunking_method) +
    pick({ 3: 0, 5: 0.05, 10: 0.065 }, c.number_of_chunks) +
    pick({ vector: 0, rrf: 0.03, weighted: 0.02 }, retrievalMode(c)) +
    (c.number_of_chunks === 10 && c.chunk_size === 2048 ? -0.02 : 0),
  0.008,
  101,
);

table(
  'default72-interactions',
  '72-combo default space; moderate main effects with interactions (long contexts hurt, hybrid search likes small chunks), noise sd 0.012',
  one,
  (c) =>
    0.5 +
    pick({ 512: 0.02, 1024: 0.03, 2048: 0 }, c.chunk_size) +
    pick({ 0: 0, 128: 0.01, 256: 0.012 }, c.chunk_overlap) +
    pick({ recursive: 0.015, hybrid: 0 }, c.chunking_method) +
    pick({ 3: 0, 5: 0.035, 10: 0.04 }, c.number_of_chunks) +
    pick({ vector: 0, rrf: 0.015, weighted: 0.025 }, retrievalMode(c)) +
    (c.number_of_chunks === 10 && c.chunk_size !== 512 ? -0.03 : 0) +
    (c.search_mode === 'hybrid' && c.chunk_size === 512 ? 0.02 : 0),
  0.012,
  202,
);

table(
  'models2x2-288',
  '2 FMs x 2 EMs, 288 combos; model effects dominate, FM x number_of_chunks interaction, noise sd 0.01',
  two,
  (c) =>
    0.4 +
    pick({ 'fm-small': 0, 'fm-large': 0.09 }, model(c, 'foundation_model')) +
    pick({ 'em-small': 0, 'em-large': 0.03 }, model(c, 'embedding_model')) +
    pick({ 512: 0, 1024: 0.03, 2048: 0.02 }, c.chunk_size) +
    pick({ 0: 0, 128: 0.01, 256: 0.005 }, c.chunk_overlap) +
    pick({ recursive: 0.01, hybrid: 0.02 }, c.chunking_method) +
    pick({ 3: 0, 5: 0.03, 10: 0.04 }, c.number_of_chunks) +
    pick({ vector: 0, rrf: 0.025, weighted: 0.015 }, retrievalMode(c)) +
    (model(c, 'foundation_model') === 'fm-small' && c.number_of_chunks === 10 ? -0.03 : 0),
  0.01,
  303,
);

table(
  'default72-noisy',
  '72-combo default space; weak effects, noise sd 0.02 comparable to them (a hard table)',
  one,
  (c) =>
    0.55 +
    pick({ 512: 0, 1024: 0.02, 2048: 0.01 }, c.chunk_size) +
    pick({ recursive: 0, hybrid: 0.01 }, c.chunking_method) +
    pick({ 3: 0, 5: 0.025, 10: 0.03 }, c.number_of_chunks) +
    pick({ vector: 0, rrf: 0.02, weighted: 0.01 }, retrievalMode(c)),
  0.02,
  404,
);
