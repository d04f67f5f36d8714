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

  it('prints the worked example scores as one JSON line with --json', async () => {
    // Prepare
    const file = join(dir, 'eval.json');
    await writeFile(file, JSON.stringify(WORKED));
    const c = capture();

    // Act
    const code = await cmdScore(parse(['--input', file, '--json'], SCORE_OPTIONS), c.io);

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

  it('prints a table by default: each metric with its mean and 95% CI', async () => {
    // Prepare: the worked example twice more, with other answers, so the metrics vary and have intervals
    const file = join(dir, 'eval2.json');
    const items = [
      { ...WORKED[0], question_id: 'a' },
      { ...WORKED[0], question_id: 'b', answer: 'Lyon.' },
      { ...WORKED[0], question_id: 'c', answer: 'The capital is Paris.' },
    ];
    await writeFile(file, JSON.stringify(items));
    const table = capture();
    const json = capture();

    // Act
    await cmdScore(parse(['--input', file], SCORE_OPTIONS), table.io);
    await cmdScore(parse(['--input', file, '--json'], SCORE_OPTIONS), json.io);

    // Assess: the table shows what the JSON holds
    const result = JSON.parse(json.out[0] as string) as {
      metrics: {
        name: string;
        scores: { mean: number; ci_low: number | null; ci_high: number | null };
      }[];
    };
    expect(table.out.slice(0, 3)).toEqual([
      `${file}: 3 questions`,
      '',
      'metric                 mean            95% CI',
    ]);
    for (const m of result.metrics) {
      const ci =
        m.scores.ci_low === null
          ? 'n/a'
          : `[${m.scores.ci_low.toFixed(4)}, ${m.scores.ci_high?.toFixed(4)}]`;
      expect(table.out).toContainEqual(
        expect.stringMatching(
          new RegExp(`^${m.name} +${m.scores.mean.toFixed(4)} +${ci.replace(/[[\]]/g, '\\$&')}$`),
        ),
      );
    }
    expect(table.out).toContainEqual(expect.stringMatching(/^Lowest overall_score: b \d\.\d{4}, /));
    expect(table.out.at(-1)).toBe('Per-question scores: --json');
  });

  it("aggregates an experiment's evaluation_results.json from its recorded scores", async () => {
    // Prepare: three records in the artefact's shape (question, answer_contexts, metrics with score)
    const record = (id: string, ac: number, f: number, cc: number | null) => ({
      question_id: id,
      question: `question ${id}?`,
      correct_answers: ['x'],
      answer: 'an answer',
      answer_contexts: [{ text: 'a context', document_key: 'doc.md' }],
      metrics: [
        { name: 'answer_correctness', evaluator: 'unitxt', score: ac },
        { name: 'faithfulness', evaluator: 'unitxt', score: f },
        { name: 'context_correctness', evaluator: 'unitxt', score: cc },
        { name: 'overall_score', evaluator: 'custom', score: 0 },
        { name: 'recall@5', evaluator: 'retrieval', score: cc === null ? null : 1 },
      ],
    });
    const file = join(dir, 'evaluation_results.json');
    await writeFile(
      file,
      JSON.stringify([
        record('q0', 1, 0.5, 1),
        record('q1', 0, 0.25, 0),
        record('q2', 0.5, 0.75, null),
      ]),
    );
    const c = capture();
    const table = capture();

    // Act
    const code = await cmdScore(parse(['--input', file, '--json'], SCORE_OPTIONS), c.io);
    await cmdScore(parse(['--input', file], SCORE_OPTIONS), table.io);

    // Assess: means over the questions where a metric applies; overall = mean of the three unitxt means
    expect(code).toBe(0);
    const result = JSON.parse(c.out[0] as string) as {
      metrics: { name: string; evaluator: string; scores: { mean: number } }[];
      question_scores: { question_id: string }[];
    };
    expect(result.metrics.map((m) => [m.name, m.evaluator, m.scores.mean])).toEqual([
      ['answer_correctness', 'unitxt', 0.5],
      ['faithfulness', 'unitxt', 0.5],
      ['context_correctness', 'unitxt', 0.5],
      ['overall_score', 'custom', 0.5],
      ['recall@5', 'retrieval', 1],
    ]);
    expect(result.question_scores.map((q) => q.question_id)).toEqual(['q0', 'q1', 'q2']);
    expect(table.out[0]).toBe(`${file} (evaluation_results.json: recorded scores): 3 questions`);
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
