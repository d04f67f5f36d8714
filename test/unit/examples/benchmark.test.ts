import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadDocuments, matchDocumentKey } from '../../../shared/src/documents/index.js';
import type { LoadedDocument } from '../../../shared/src/documents/types.js';
import { type BenchmarkQuestion, loadBenchmark } from '../../../shared/src/evaluation/benchmark.js';
import { STOPWORDS, words } from '../../../shared/src/text/analyzer.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const BENCHMARK = path.join(repoRoot, 'examples/benchmark.json');
const DOCS = path.join(repoRoot, 'examples/docs');

/** Words of an answer that must occur in its gold documents: everything but stopwords. */
const contentWords = (text: string): string[] => words(text).filter((w) => !STOPWORDS.has(w));

describe('examples/benchmark.json', () => {
  let questions: BenchmarkQuestion[];
  let documents: Map<string, LoadedDocument>;

  beforeAll(async () => {
    questions = await loadBenchmark(BENCHMARK);
    const loaded = await loadDocuments([DOCS]);
    expect(loaded.failures).toEqual([]);
    documents = new Map(loaded.documents.map((d) => [d.key, d]));
  });

  it('parses with at least 30 questions, at least 3 of them unanswerable', () => {
    // Prepare
    const unanswerable = questions.filter((q) => q.correctAnswers.length === 0);
    // Act / Assess
    expect(questions.length).toBeGreaterThanOrEqual(30);
    expect(unanswerable.length).toBeGreaterThanOrEqual(3);
    for (const q of unanswerable) expect(q.documentKeys).toEqual([]);
  });

  it('gives every answerable question answers and gold keys that are stored document keys', () => {
    // Prepare
    const keys = [...documents.keys()];
    // Act
    const unknown = questions.flatMap((q) =>
      q.documentKeys.filter((k) => matchDocumentKey(k, keys) !== k),
    );
    // Assess
    expect(unknown).toEqual([]);
    for (const q of questions.filter((x) => x.correctAnswers.length > 0)) {
      expect(q.documentKeys.length, q.question).toBeGreaterThan(0);
    }
  });

  it('cites every folder and every format of the handbook', () => {
    // Prepare
    const cited = new Set(questions.flatMap((q) => q.documentKeys));
    // Act
    const formats = new Set([...cited].map((k) => path.extname(k)));
    const folders = new Set([...cited].map((k) => k.split('/')[0]));
    // Assess
    expect([...formats].sort()).toEqual(['.docx', '.html', '.md', '.pdf', '.txt']);
    expect([...folders].sort()).toEqual(['about', 'operations', 'people', 'policies']);
    expect(questions.filter((q) => q.documentKeys.length >= 2).length).toBeGreaterThanOrEqual(3);
  });

  it('has every content word of every answer in the text of its gold documents', () => {
    // Prepare
    const missing: string[] = [];
    // Act
    for (const q of questions) {
      const vocabulary = new Set(
        q.documentKeys.flatMap((k) => words(documents.get(k)?.text ?? '')),
      );
      for (const answer of q.correctAnswers) {
        for (const w of contentWords(answer)) {
          if (!vocabulary.has(w)) missing.push(`${q.questionId} "${answer}": ${w}`);
        }
      }
    }
    // Assess
    expect(missing).toEqual([]);
  });

  it('has no duplicate questions and short answers', () => {
    // Prepare
    const texts = questions.map((q) => q.question.toLowerCase());
    // Act
    const longest = Math.max(
      ...questions.flatMap((q) => q.correctAnswers.map((a) => words(a).length)),
    );
    // Assess
    expect(new Set(texts).size).toBe(texts.length);
    expect(longest).toBeLessThanOrEqual(12);
  });
});
