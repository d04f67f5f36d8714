/**
 * Measures the local extractive model's answer quality and abstention end to end, the way the CLI answers:
 * default chunking, default (local) embedder and retrieval, an in-memory PGlite store, top-5 passages.
 *
 *   node --import tsx scripts/measure-extractive.ts [--data ../shared/data/clapnq] [--limit 100]
 *       [--offset 0] [--no-term-stats] [--examples-only | --clapnq-only] [--show]
 *       [--split none|tune|heldout|halves]
 *
 * `--split halves` (or `tune` / `heldout`) scores the fixed halves of all 180 + 180 ClapNQ dev questions instead
 * of `--offset`/`--limit`: a question is in the tuning half when the first byte of the SHA-256 of its text is even.
 * The local model's thresholds were tuned on the tuning half only.
 *
 * ClapNQ: abstention rate on `benchmark.unanswerable.dev.json` (want high), abstention rate on `benchmark.dev.json`
 * (want low), mean answer_correctness and faithfulness on the answerable questions (abstentions included, scored as
 * the text they are). Then the same on `examples/benchmark.json` over `examples/docs`.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createChunker } from '../shared/src/chunking/index.js';
import type { AI4RAGChunk } from '../shared/src/chunking/types.js';
import {
  DEFAULT_CHUNKING,
  DEFAULT_COLLECTION,
  defaultRetrievalFor,
} from '../shared/src/defaults.js';
import { loadDocuments } from '../shared/src/documents/index.js';
import { createEmbedder, DEFAULT_EMBEDDING_MODEL } from '../shared/src/embeddings/factory.js';
import { type BenchmarkQuestion, loadBenchmark } from '../shared/src/evaluation/benchmark.js';
import { answerCorrectness, faithfulness } from '../shared/src/evaluation/unitxt.js';
import { CANNOT_ANSWER, LocalExtractiveModel } from '../shared/src/generation/local-extractive.js';
import { buildMessages, DEFAULT_TEMPLATES } from '../shared/src/generation/templates.js';
import { buildTermStats } from '../shared/src/generation/term-stats.js';
import { ingestDocuments } from '../shared/src/ingest/pipeline.js';
import { Retriever } from '../shared/src/retrieval/retriever.js';
import { openStore } from '../shared/src/runtime/open-store.js';

const { values } = parseArgs({
  options: {
    data: { type: 'string', default: '../shared/data/clapnq' },
    limit: { type: 'string', default: '100' },
    offset: { type: 'string', default: '0' },
    'no-term-stats': { type: 'boolean', default: false },
    'examples-only': { type: 'boolean', default: false },
    'clapnq-only': { type: 'boolean', default: false },
    show: { type: 'boolean', default: false },
    split: { type: 'string', default: 'none' },
  },
});

const TOP_K = 5;
const useTermStats = !values['no-term-stats'];

interface Scores {
  questions: number;
  abstained: number;
  correctness: number;
  faithfulness: number;
}

/** Indexes the documents at `paths` like `ai4rag ingest` and returns a question → answer function. */
async function indexCorpus(paths: string[]) {
  const loaded = await loadDocuments(paths.map((p) => resolve(p)));
  if (loaded.failures.length > 0)
    throw new Error(`load failures: ${JSON.stringify(loaded.failures)}`);
  const embedder = await createEmbedder(DEFAULT_EMBEDDING_MODEL);
  const store = await openStore({ kind: 'pglite', embedder, collectionName: DEFAULT_COLLECTION });
  const chunker = createChunker(DEFAULT_CHUNKING);
  const chunks: AI4RAGChunk[] = [];
  await ingestDocuments(loaded.documents, {
    store,
    chunking: DEFAULT_CHUNKING,
    chunk: async (doc) => {
      const out = await chunker.chunk(doc);
      chunks.push(...out);
      return out;
    },
  });
  const termStats = useTermStats ? buildTermStats(chunks.map((c) => c.text)) : undefined;
  const model = new LocalExtractiveModel(termStats === undefined ? {} : { termStats });
  const retriever = new Retriever(store, {
    numberOfChunks: TOP_K,
    ...defaultRetrievalFor(DEFAULT_EMBEDDING_MODEL),
  });
  const answer = async (question: string) => {
    const passages = await retriever.retrieve(question);
    const { content } = await model.chat(buildMessages(DEFAULT_TEMPLATES, question, passages));
    return { content, contexts: passages.map((p) => p.text) };
  };
  return { answer, close: () => store.close(), documents: loaded.documents.length, chunks };
}

async function score(
  questions: BenchmarkQuestion[],
  answer: (q: string) => Promise<{ content: string; contexts: string[] }>,
  label: string,
): Promise<Scores> {
  const s: Scores = { questions: 0, abstained: 0, correctness: 0, faithfulness: 0 };
  for (const q of questions) {
    const { content, contexts } = await answer(q.question);
    const abstained = content === CANNOT_ANSWER;
    s.questions += 1;
    if (abstained) s.abstained += 1;
    if (q.correctAnswers.length > 0) {
      s.correctness += answerCorrectness(content, q.correctAnswers);
      s.faithfulness += contexts.length > 0 ? faithfulness(content, contexts) : 0;
    }
    if (values.show) {
      const gold = q.correctAnswers[0] ?? '(unanswerable)';
      process.stdout.write(`[${label}] ${q.question}\n  -> ${content}\n  gold: ${gold}\n`);
    }
  }
  return s;
}

function report(label: string, s: Scores, answerable: boolean): void {
  const rate = (s.abstained / Math.max(1, s.questions)).toFixed(3);
  const extra = answerable
    ? `, answer_correctness ${(s.correctness / s.questions).toFixed(3)}, faithfulness ${(s.faithfulness / s.questions).toFixed(3)}`
    : '';
  process.stdout.write(`${label}: n=${s.questions}, abstained ${s.abstained} (${rate})${extra}\n`);
}

/**
 * The fixed tuning / held-out split of the ClapNQ dev questions: a question is in the tuning half when the first
 * byte of the SHA-256 of its text is even (ClapNQ's benchmark rows carry no id). Tune only on `tune`.
 */
function half(question: string): 'tune' | 'heldout' {
  return (createHash('sha256').update(question).digest()[0] ?? 0) % 2 === 0 ? 'tune' : 'heldout';
}

const SPLITS = ['none', 'tune', 'heldout', 'halves'] as const;
const split = values.split as (typeof SPLITS)[number];
if (!SPLITS.includes(split)) throw new Error(`--split must be one of ${SPLITS.join(', ')}`);

const limit = Number(values.limit);
const offset = Number(values.offset);
process.stdout.write(`term stats: ${useTermStats ? 'corpus chunks' : 'off (context only)'}\n`);

if (!values['examples-only']) {
  const dir = resolve(values.data);
  if (!existsSync(dir)) {
    process.stdout.write(`skipping ClapNQ: ${dir} not found\n`);
  } else {
    const started = performance.now();
    const corpus = await indexCorpus([resolve(dir, 'corpus.jsonl')]);
    process.stdout.write(
      `ClapNQ: ${corpus.documents} passages, ${corpus.chunks.length} chunks indexed in ${((performance.now() - started) / 1000).toFixed(1)} s; questions ${split === 'none' ? `${offset}..${offset + limit - 1}` : `split ${split}`}\n`,
    );
    const allAnswerable = await loadBenchmark(resolve(dir, 'benchmark.dev.json'));
    const allUnanswerable = await loadBenchmark(resolve(dir, 'benchmark.unanswerable.dev.json'));
    // With --split the whole dev set is split into halves (--offset/--limit are then ignored).
    const halves = split === 'halves' ? (['tune', 'heldout'] as const) : [split];
    for (const h of halves) {
      const pick = (qs: BenchmarkQuestion[]) =>
        h === 'none' ? qs.slice(offset, offset + limit) : qs.filter((q) => half(q.question) === h);
      if (h !== 'none') process.stdout.write(`  ${h} half:\n`);
      const answerable = pick(allAnswerable);
      const unanswerable = pick(allUnanswerable);
      report('  answerable', await score(answerable, corpus.answer, 'A'), true);
      report('  unanswerable', await score(unanswerable, corpus.answer, 'U'), false);
    }
    await corpus.close();
  }
}

if (!values['clapnq-only']) {
  const examples = await indexCorpus(['examples/docs']);
  const questions = await loadBenchmark('examples/benchmark.json');
  const answerable = questions.filter((q) => q.correctAnswers.length > 0);
  const unanswerable = questions.filter((q) => q.correctAnswers.length === 0);
  process.stdout.write(
    `examples: ${examples.documents} documents, ${examples.chunks.length} chunks\n`,
  );
  report('  answerable', await score(answerable, examples.answer, 'EA'), true);
  report('  unanswerable', await score(unanswerable, examples.answer, 'EU'), false);
  await examples.close();
}
