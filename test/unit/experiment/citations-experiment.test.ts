import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateExperiment } from '../../../bin/cli/dry-run.js';
import { main } from '../../../bin/cli/main.js';
import { scoreEvaluationData } from '../../../shared/src/evaluation/score.js';
import type { EvaluationRecord, LeaderboardEntry } from '../../../shared/src/experiment/types.js';
import {
  CITATION_INSTRUCTION,
  citationPrecision,
} from '../../../shared/src/generation/citations.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const DOCS = join(ROOT, 'examples/docs');
const BENCHMARK = join(ROOT, 'examples/benchmark.json');

/** One configuration, so both runs evaluate the same pattern. */
const SPACE = {
  chunking_method: ['recursive'],
  chunk_size: [512],
  chunk_overlap: [128],
  number_of_chunks: [3],
  search_mode: ['hybrid'],
  ranker_strategy: ['rrf'],
  ranker_k: [60],
  ranker_alpha: [1],
};

interface Run {
  code: number;
  leaderboard: LeaderboardEntry[];
  evaluation: EvaluationRecord[];
  report: string;
}

const round4 = (x: number) => Math.round(x * 1e4) / 1e4;

describe('ai4rag experiment --citations on examples/docs and examples/benchmark.json', () => {
  let dir: string;
  let off: Run;
  let on: Run;

  async function run(id: string, extra: string[]): Promise<Run> {
    const out = join(dir, `out-${id}`);
    const code = await main(
      [
        'experiment',
        '--docs',
        DOCS,
        '--benchmark',
        BENCHMARK,
        '--search-space',
        join(dir, 'space.json'),
        '--max-evals',
        '1',
        '--experiment-id',
        id,
        '--out',
        out,
        '--data-dir',
        join(dir, 'data'),
        '--quiet',
        ...extra,
      ],
      { out: () => undefined, err: () => undefined },
    );
    const read = async (name: string) => readFile(join(out, name), 'utf8');
    return {
      code,
      leaderboard: JSON.parse(await read('leaderboard.json')) as LeaderboardEntry[],
      evaluation: JSON.parse(await read('evaluation_results.json')) as EvaluationRecord[],
      report: await read('report.html'),
    };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cite-exp-'));
    await writeFile(join(dir, 'space.json'), JSON.stringify(SPACE));
    // Off first, in the same data dir: the run with citations must not be answered from its result cache.
    off = await run('cite-off', []);
    on = await run('cite-on', ['--citations']);
  }, 300_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const metric = (r: EvaluationRecord, name: string) => r.metrics.find((m) => m.name === name);

  it('reports citation_precision per question with the value the scorer computes, outside overall_score', () => {
    // Assess
    expect([off.code, on.code]).toEqual([0, 0]);
    const answered = on.evaluation.filter((r) => r.error === undefined);
    expect(answered.length).toBe(on.evaluation.length);
    // The local model cites every sentence it extracts.
    expect(answered.filter((r) => /\[\d+\]/.test(r.answer)).length).toBeGreaterThan(40);
    for (const r of answered) {
      const contexts = r.answer_contexts.map((c) => c.text);
      const expected = citationPrecision(r.answer, contexts);
      expect(metric(r, 'citation_precision')?.score).toBe(
        expected === null ? null : round4(expected),
      );
    }
    // The pattern's aggregate is the scorer's over the same answers and contexts.
    const scored = scoreEvaluationData(
      answered.map((r) => ({
        question_id: r.question_id,
        answer: r.answer,
        contexts: r.answer_contexts.map((c) => c.text),
        context_ids: r.answer_contexts.map((c) => c.document_key),
        ground_truths: r.correct_answers,
        ground_truths_context_ids: [],
      })),
    );
    const pattern = on.leaderboard[0]?.pattern;
    const reported = pattern?.evaluation.metrics.find((m) => m.name === 'citation_precision');
    const expected = scored.metrics.find((m) => m.name === 'citation_precision');
    expect(reported?.scores).toEqual(expected?.scores);
    expect(reported?.scores.mean).toBeGreaterThan(0.5);
    expect(reported?.evaluator).toBe('custom');
    expect(reported?.optimization_metric).toBeUndefined();
  });

  it('leaves overall_score and the other metrics as without citations (markers are not scored as answer text)', () => {
    // Assess
    const metrics = (r: Run) =>
      Object.fromEntries(
        (r.leaderboard[0]?.pattern.evaluation.metrics ?? [])
          .filter((m) => m.name !== 'citation_precision')
          .map((m) => [m.name, m.scores]),
      );
    expect(metrics(on)).toEqual(metrics(off));
    expect(on.leaderboard[0]?.score).toBe(off.leaderboard[0]?.score);
  });

  it('shows citation_precision in the report with citations, and nowhere without', () => {
    // Assess
    expect(on.report).toContain('citation_precision');
    expect(off.report).not.toContain('citation_precision');
    expect(JSON.stringify(off.leaderboard)).not.toContain('citation_precision');
    expect(off.evaluation.every((r) => metric(r, 'citation_precision') === undefined)).toBe(true);
    expect(off.evaluation.every((r) => !/\[\d+\]/.test(r.answer))).toBe(true);
  });
});

describe('ai4rag experiment --dry-run with citations', () => {
  it('counts the citation instruction in every answer prompt', async () => {
    // Prepare
    const questions = JSON.parse(await readFile(BENCHMARK, 'utf8')) as unknown[];
    const input = {
      experimentId: 'cite-dry',
      documentsPrefix: 'documents/',
      benchmarkKey: 'experiments/cite-dry/input/benchmark.json',
      maxEvals: 1,
      searchSpace: SPACE,
    };

    // Act
    const off = await estimateExperiment({ input, docsPath: DOCS, questions });
    const on = await estimateExperiment({
      input: { ...input, citations: true },
      docsPath: DOCS,
      questions,
    });

    // Assess: "\n\n" + the instruction, 184 characters = 46 tokens (ceil(characters / 4)) per question.
    const extra = `\n\n${CITATION_INSTRUCTION}`.length;
    expect(extra % 4).toBe(0);
    const [a, b] = [off.estimate.configurations[0], on.estimate.configurations[0]];
    expect((b?.promptTokensPerQuestion ?? 0) - (a?.promptTokensPerQuestion ?? 0)).toBe(extra / 4);
    expect((b?.trial.prompt_tokens ?? 0) - (a?.trial.prompt_tokens ?? 0)).toBe(
      (extra / 4) * questions.length,
    );
  });
});
