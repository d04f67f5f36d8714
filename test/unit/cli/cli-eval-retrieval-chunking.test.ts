/**
 * `ai4rag eval-retrieval` with the chunking methods of issue 15 on the sample corpus: each method indexes and is
 * scored, hierarchical ranks documents by the parents of the children it finds.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';

const DOCS = fileURLToPath(new URL('../../../examples/docs', import.meta.url));
const BENCHMARK = fileURLToPath(new URL('../../../examples/benchmark.json', import.meta.url));

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('ai4rag eval-retrieval --chunking', () => {
  it.each([
    [['--chunking', 'fixed', '--chunk-size', '128', '--chunk-overlap', '16'], 'with fixed 128/16,'],
    [['--chunking', 'semantic', '--chunk-size', '256'], 'with semantic 256/0,'],
    [
      [
        '--chunking',
        'hierarchical',
        '--chunk-size',
        '128',
        '--chunk-overlap',
        '16',
        '--parent-chunk-size',
        '512',
      ],
      'with hierarchical 128/16 (parents 512),',
    ],
  ])(
    '%j indexes the sample corpus and scores its 45 answerable questions',
    async (flags, described) => {
      // Prepare
      const c = capture();
      // Act
      const code = await main(
        ['eval-retrieval', '--corpus', DOCS, '--benchmark', BENCHMARK, ...flags],
        c.io,
      );
      // Assess
      expect(code).toBe(0);
      expect(c.out.some((l) => l.startsWith('indexed ') && l.includes(described))).toBe(true);
      const result = JSON.parse(c.out[c.out.length - 1] ?? '{}') as Record<string, number>;
      expect(result.questions).toBe(45); // the 5 unanswerable questions have no gold documents
      for (const k of ['recall@1', 'recall@5', 'recall@10', 'mrr@10', 'ndcg@10']) {
        expect(result[k]).toBeGreaterThan(0);
        expect(result[k]).toBeLessThanOrEqual(1);
      }
      expect(result['recall@1']).toBeLessThanOrEqual(result['recall@10'] as number);
    },
    120_000,
  );
});
