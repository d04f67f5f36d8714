import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from '../../../bin/cli/args.js';
import { cmdScore, SCORE_OPTIONS } from '../../../bin/cli/score.js';
import { ValidationError } from '../../../shared/src/errors.js';

const WORKED = [
  {
    question: 'What is the capital of France?',
    answer: 'Paris is the capital, with about 2 million people.',
    contexts: [
      'France is a country in Western Europe.',
      'Paris is the capital and largest city of France.',
      'Paris is the capital and largest city of France.',
    ],
    context_ids: ['doc_b', 'doc_a', 'doc_a'],
    ground_truths: ['The capital is Paris, home to roughly 2.1 million residents.'],
    ground_truths_context_ids: ['doc_a'],
  },
];

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
}

describe('ai4rag score', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-score-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints the worked example scores as one JSON line', async () => {
    // Prepare
    const file = join(dir, 'eval.json');
    await writeFile(file, JSON.stringify(WORKED));
    const c = capture();

    // Act
    const code = await cmdScore(parse(['--input', file], SCORE_OPTIONS), c.io);

    // Assess
    expect(code).toBe(0);
    expect(c.out).toHaveLength(1);
    const result = JSON.parse(c.out[0] as string);
    expect(result.metrics).toEqual([
      {
        name: 'answer_correctness',
        evaluator: 'unitxt',
        scores: { mean: 0.4444, ci_low: null, ci_high: null },
      },
      {
        name: 'faithfulness',
        evaluator: 'unitxt',
        scores: { mean: 0.375, ci_low: null, ci_high: null },
      },
      {
        name: 'context_correctness',
        evaluator: 'unitxt',
        scores: { mean: 0.5, ci_low: null, ci_high: null },
      },
      {
        name: 'overall_score',
        evaluator: 'custom',
        scores: { mean: 0.4398, ci_low: null, ci_high: null },
      },
    ]);
    expect(result.question_scores).toEqual([
      {
        question_id: 'q0',
        metrics: [
          { name: 'answer_correctness', evaluator: 'unitxt', value: 0.4444 },
          { name: 'faithfulness', evaluator: 'unitxt', value: 0.375 },
          { name: 'context_correctness', evaluator: 'unitxt', value: 0.5 },
          { name: 'overall_score', evaluator: 'custom', value: 0.4398 },
        ],
      },
    ]);
  });

  it('gives the same output with --json and a --seed', async () => {
    // Prepare
    const file = join(dir, 'eval2.json');
    await writeFile(file, JSON.stringify(WORKED));
    const a = capture();
    const b = capture();

    // Act
    await cmdScore(parse(['--input', file], SCORE_OPTIONS), a.io);
    await cmdScore(parse(['--input', file, '--json', '--seed', '3'], SCORE_OPTIONS), b.io);

    // Assess
    expect(b.out).toEqual(a.out);
  });

  it('rejects a missing flag, a missing file, invalid JSON and a non-array', async () => {
    // Prepare
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{not json');
    const obj = join(dir, 'obj.json');
    await writeFile(obj, '{}');
    const c = capture();

    // Act / Assess
    await expect(cmdScore(parse([], SCORE_OPTIONS), c.io)).rejects.toThrow(/--input FILE/);
    await expect(
      cmdScore(parse(['--input', join(dir, 'nope.json')], SCORE_OPTIONS), c.io),
    ).rejects.toThrow(/cannot read/);
    await expect(cmdScore(parse(['--input', bad], SCORE_OPTIONS), c.io)).rejects.toThrow(
      ValidationError,
    );
    await expect(cmdScore(parse(['--input', obj], SCORE_OPTIONS), c.io)).rejects.toThrow(
      /JSON array/,
    );
    await expect(
      cmdScore(parse(['--input', obj, '--seed', 'x'], SCORE_OPTIONS), c.io),
    ).rejects.toThrow(/--seed must be an integer/);
    expect(c.out).toEqual([]);
  });
});
