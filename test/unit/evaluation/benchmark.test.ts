import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BenchmarkError,
  loadBenchmark,
  parseBenchmark,
} from '../../../shared/src/evaluation/benchmark.js';

describe('parseBenchmark', () => {
  it('accepts the current and the older key field and numbers questions q0, q1, …', () => {
    const qs = parseBenchmark([
      { question: 'A?', correct_answers: ['a'], correct_answer_document_keys: ['doc.md'] },
      { question: 'B?', correct_answers: [], correct_answer_document_ids: ['42'] },
      { question: 'C?', correct_answers: [], correct_answer_document_ids: [] },
    ]);
    expect(qs).toEqual([
      { questionId: 'q0', question: 'A?', correctAnswers: ['a'], documentKeys: ['doc.md'] },
      { questionId: 'q1', question: 'B?', correctAnswers: [], documentKeys: ['42'] },
      { questionId: 'q2', question: 'C?', correctAnswers: [], documentKeys: [] },
    ]);
  });

  it.each([
    [{}, 'expected a JSON array'],
    [[], 'has no questions'],
    [[{ question: '' }], '"question" must be a non-empty string'],
    [[{ question: 'x', extra: 1 }], 'unknown field(s) extra'],
    [[{ question: 'x', correct_answers: 'a' }], '"correct_answers" must be an array'],
    [
      [{ question: 'x', correct_answer_document_keys: ['a'], correct_answer_document_ids: ['a'] }],
      'not both',
    ],
  ])('rejects %j with a clear message', (data, message) => {
    expect(() => parseBenchmark(data, 'b.json')).toThrow(BenchmarkError);
    expect(() => parseBenchmark(data, 'b.json')).toThrow(message);
  });

  it('reports unreadable and malformed files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bench-'));
    try {
      await writeFile(join(dir, 'bad.json'), '{oops');
      await expect(loadBenchmark(join(dir, 'bad.json'))).rejects.toThrow('not valid JSON');
      await expect(loadBenchmark(join(dir, 'missing.json'))).rejects.toThrow(
        'cannot read benchmark file',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
