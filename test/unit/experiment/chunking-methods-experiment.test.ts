import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocalExperiment } from '../../../bin/cli/local-state-machine.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import {
  INDEX_MARKERS_PREFIX,
  ledgerKeys,
  readState,
} from '../../../shared/src/experiment/ledger.js';
import { parameterMarginals } from '../../../shared/src/experiment/report-effects.js';
import type { ExperimentArtefacts } from '../../../shared/src/experiment/steps.js';
import type { EvaluationRecord, LeaderboardEntry } from '../../../shared/src/experiment/types.js';
import { getJson, putJson } from '../../../shared/src/ports/object-store.js';

const DOCS = fileURLToPath(new URL('../../../examples/docs', import.meta.url));
const BENCHMARK = fileURLToPath(new URL('../../../examples/benchmark.json', import.meta.url));

/**
 * Recursive, semantic and hierarchical (parent–child) chunking of 256-token chunks: rule 1 gives semantic overlap 0
 * and the others 64, rule 12 gives hierarchical the 1024-token parents and the others the sentinel 0, so the grid is
 * exactly three trials, one per method.
 */
const SEARCH_SPACE = {
  chunking_method: ['recursive', 'semantic', 'hierarchical'],
  chunk_size: [256],
  chunk_overlap: [0, 64],
  parent_chunk_size: [0, 1024],
  number_of_chunks: [3],
  search_mode: ['vector'],
  ranker_strategy: [''],
  ranker_k: [0],
  ranker_alpha: [1],
};

describe('an experiment spanning recursive, semantic and hierarchical chunking, run through the local state machine', () => {
  let dir: string;
  let runtime: LocalRuntime;
  let artefacts: ExperimentArtefacts;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-chunking-exp-'));
    runtime = createLocalRuntime({ dataDir: dir, documentsDir: DOCS, inMemory: true });
    const benchmark = JSON.parse(await readFile(BENCHMARK, 'utf8')) as unknown[];
    await putJson(runtime.objectStore, 'experiments/chunk-1/input/benchmark.json', benchmark);
    const out = await runLocalExperiment({
      runtime,
      input: {
        experimentId: 'chunk-1',
        benchmarkKey: 'experiments/chunk-1/input/benchmark.json',
        maxEvals: 3,
        searchSpace: SEARCH_SPACE,
      },
    });
    artefacts = (out.output as { artefacts: ExperimentArtefacts }).artefacts;
  }, 400_000);
  afterAll(async () => {
    await runtime?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('completes one trial per method, each with its own chunking recorded', async () => {
    // Prepare
    const state = await readState(runtime.objectStore, 'experiments/chunk-1/');
    // Assess
    expect(state.maxCombinations).toBe(3);
    expect(artefacts).toMatchObject({ trials: 3, failed: 0 });
    expect(state.trials.every((t) => t.status === 'done')).toBe(true);
    const chunking = state.trials
      .map((t) => [
        t.config.chunking_method,
        t.config.chunk_overlap,
        t.config.parent_chunk_size,
        t.collection,
      ])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(chunking.map((c) => c.slice(0, 3))).toEqual([
      ['hierarchical', 64, 1024],
      ['recursive', 64, 0],
      ['semantic', 0, 0],
    ]);
    // Three indexing configurations, three indexes
    expect(new Set(chunking.map((c) => c[3])).size).toBe(3);
  });

  it('counts the sentence groups semantic chunking embedded in its index usage, beside the chunks', async () => {
    // Prepare
    const keys = ledgerKeys('experiments/chunk-1/');
    const state = await readState(runtime.objectStore, 'experiments/chunk-1/');
    const usage = async (method: string) => {
      const t = state.trials.find((x) => x.config.chunking_method === method);
      const marker = await getJson<{ chunks: number }>(
        runtime.objectStore,
        `${INDEX_MARKERS_PREFIX}${t?.collection}.json`,
      );
      const u = await getJson<{ calls: number }>(
        runtime.objectStore,
        keys.indexUsage(t?.trialId ?? ''),
      );
      return { chunks: marker.chunks, calls: u.calls };
    };
    // Act
    const recursive = await usage('recursive');
    const semantic = await usage('semantic');
    // Assess: one embedding per chunk, plus (semantic) one per sentence group not cached
    expect(recursive.calls).toBe(recursive.chunks);
    expect(semantic.calls).toBeGreaterThan(semantic.chunks);
  });

  it('serves each pattern with its chunking, and the report shows chunking_method as a parameter effect', async () => {
    // Prepare
    const keys = ledgerKeys('experiments/chunk-1/');
    const leaderboard = await getJson<LeaderboardEntry[]>(runtime.objectStore, keys.leaderboard);
    const report = new TextDecoder().decode(await runtime.objectStore.get(keys.report));
    const state = await readState(runtime.objectStore, 'experiments/chunk-1/');
    // Act
    const chunkings = leaderboard
      .map((e) => e.pattern.settings.chunking)
      .sort((a, b) => a.method.localeCompare(b.method));
    const marginals = parameterMarginals(state.trials);
    // Assess
    expect(chunkings).toEqual([
      {
        method: 'hierarchical',
        chunk_size: 256,
        chunk_overlap: 64,
        include_metadata: false,
        parent_chunk_size: 1024,
      },
      { method: 'recursive', chunk_size: 256, chunk_overlap: 64, include_metadata: false },
      { method: 'semantic', chunk_size: 256, chunk_overlap: 0, include_metadata: false },
    ]);
    const effect = marginals.effects.find((e) => e.parameter === 'chunking_method');
    expect(effect?.values.map((v) => [v.value, v.trials])).toEqual([
      ['hierarchical', 1],
      ['recursive', 1],
      ['semantic', 1],
    ]);
    expect(marginals.fixed.find((f) => f.parameter === 'parent_chunk_size')).toEqual({
      parameter: 'parent_chunk_size',
      value: '1024',
      trials: 1,
      condition: 'chunking_method = hierarchical',
    });
    expect(report).toContain('<h3>chunking_method <span class="muted">');
    expect(report).toContain('<title>chunking_method = semantic: mean');
    expect(report).toContain('hierarchical ⊂ 1024');
  });

  it('answers hierarchical questions from distinct parents, longer than any 256-token child', async () => {
    // Prepare
    const keys = ledgerKeys('experiments/chunk-1/');
    const state = await readState(runtime.objectStore, 'experiments/chunk-1/');
    const contexts = async (method: string) => {
      const t = state.trials.find((x) => x.config.chunking_method === method);
      const records = await getJson<EvaluationRecord[]>(
        runtime.objectStore,
        keys.patternEvaluation(t?.pattern_name ?? ''),
      );
      return records.map((r) => r.answer_contexts.map((c) => c.text));
    };
    // Act
    const hierarchical = await contexts('hierarchical');
    const recursive = await contexts('recursive');
    // Assess: 256 tokens are at most 1,024 characters; a parent holds up to 1,024 tokens
    const longest = (lists: string[][]) => Math.max(...lists.flat().map((t) => t.length));
    expect(hierarchical).toHaveLength(50);
    expect(hierarchical.every((list) => list.length === 3 && new Set(list).size === 3)).toBe(true);
    expect(longest(recursive)).toBeLessThanOrEqual(1024);
    expect(longest(hierarchical)).toBeGreaterThan(1024);
  });
});
