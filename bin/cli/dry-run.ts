/**
 * `ai4rag experiment --dry-run`: the estimate of the run's tokens (and cost, with a price table) from the documents,
 * the benchmark and the search space, printed as a table. It opens no store and calls no model.
 */
import { loadDocuments } from '../../shared/src/documents/index.js';
import { parseBenchmark } from '../../shared/src/evaluation/benchmark.js';
import { estimateRun, type RunEstimate } from '../../shared/src/experiment/estimate.js';
import { parseExperimentInput } from '../../shared/src/experiment/input.js';
import { trialSettings } from '../../shared/src/experiment/params.js';
import {
  DEFAULT_EXPERIMENT_EMBEDDING_MODELS,
  DEFAULT_EXPERIMENT_FOUNDATION_MODELS,
  experimentCandidates,
  sampleBenchmark,
} from '../../shared/src/experiment/steps.js';
import type { TrialConfig, UsageSummary } from '../../shared/src/experiment/types.js';
import { CITATION_INSTRUCTION } from '../../shared/src/generation/citations.js';
import { DEFAULT_TEMPLATES } from '../../shared/src/generation/templates.js';
import { needsPreSelection } from '../../shared/src/optimizer/preselection.js';
import { jsonLine } from './json.js';

type Io = { out(line: string): void; err(line: string): void };

/** What the dry run reads: the experiment's input as the CLI built it, the documents' path and the questions. */
export interface DryRunInput {
  input: Record<string, unknown>;
  docsPath: string;
  questions: unknown[];
}

/**
 * Estimates an experiment without running it.
 * @throws {ValidationError} for a bad input, benchmark, search space or documents path.
 */
export async function estimateExperiment(
  given: DryRunInput,
): Promise<{ estimate: RunEstimate; documents: number; warnings: string[] }> {
  const input = parseExperimentInput(given.input);
  const loaded = await loadDocuments([given.docsPath]);
  const corpusCharacters = loaded.documents.reduce((n, d) => n + d.text.length, 0);
  const questions = sampleBenchmark(
    parseBenchmark(given.questions, 'benchmark'),
    input.benchmarkSampleSize,
  ).map((q) => q.question);
  const foundation = input.foundationModels ?? [...DEFAULT_EXPERIMENT_FOUNDATION_MODELS];
  const embedding = input.embeddingModels ?? [...DEFAULT_EXPERIMENT_EMBEDDING_MODELS];
  const warnings: string[] = [];
  if (
    !input.skipPreSelection &&
    needsPreSelection(foundation.length, embedding.length, {
      foundation: input.nPreSelectFoundationModels,
      embedding: input.nPreSelectEmbeddingModels,
    })
  ) {
    warnings.push(
      `model pre-selection will run first (more than ${input.nPreSelectFoundationModels} foundation or ${input.nPreSelectEmbeddingModels} embedding models): its calls are not estimated, and the estimate keeps every model in the search space`,
    );
  }
  // No embedder is created (that would call the endpoint): context lengths are unknown, so configurations a
  // model's context window would exclude are kept (the estimate errs high).
  const candidates = experimentCandidates(
    input,
    foundation,
    embedding.map((modelId) => ({ modelId })),
    'pglite',
  );
  const estimate = estimateRun({
    corpusCharacters,
    questions,
    candidates,
    maxEvals: input.maxEvals,
    // With citations the instruction follows the system message of every answer (as SimpleRAG sends it).
    ...(input.citations === true && {
      templates: {
        ...DEFAULT_TEMPLATES,
        system: `${DEFAULT_TEMPLATES.system}\n\n${CITATION_INSTRUCTION}`,
      },
    }),
    ...(input.judgeModel !== undefined && { judgeModel: input.judgeModel }),
    ...(input.prices !== undefined && { prices: input.prices }),
  });
  return { estimate, documents: loaded.documents.length, warnings };
}

const n = (x: number): string => x.toLocaleString('en-US');
const usd = (x: number | undefined): string => (x === undefined ? '–' : `$${x}`);

function configLabel(config: TrialConfig): string {
  const s = trialSettings(config);
  const r = s.retrieval;
  const ranker = r.searchMode === 'hybrid' && r.rankerStrategy !== '' ? `/${r.rankerStrategy}` : '';
  const window = r.method === 'window' ? ` ±${r.windowSize}` : '';
  const rerank = r.reranker ? ` · rerank ${r.reranker.candidates}` : '';
  return `${s.chunking.method} ${s.chunking.chunkSize}/${s.chunking.chunkOverlap} · ${r.searchMode}${ranker} · k ${r.numberOfChunks}${window}${rerank} · ${s.foundationModel} · ${s.embeddingModel}`;
}

function tokens(u: UsageSummary, role: string): number {
  return u.models
    .filter((m) => m.role === role)
    .reduce((t, m) => t + m.prompt_tokens + m.completion_tokens, 0);
}

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    `  ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ')}`.trimEnd();
  return [line(head), ...rows.map(line)];
}

/** The dry run's report, as printed. */
export function renderEstimate(
  estimate: RunEstimate,
  documents: number,
  warnings: readonly string[],
): string[] {
  const priced = estimate.total.models.some((m) => m.cost_usd !== undefined);
  const judged = estimate.configurations.some((c) =>
    c.trial.models.some((m) => m.role === 'judge'),
  );
  const lines = [
    'Dry run: an ESTIMATE of the tokens (and cost) this experiment would use. No model was called.',
    `Corpus: ${documents} documents, ${n(estimate.corpusTokens)} tokens; ${estimate.questions} questions; ${estimate.configurations.length} valid configurations, ${estimate.trials} trial(s) at most.`,
    ...warnings.map((w) => `Note: ${w}.`),
    '',
    'Per trial of each configuration (tokens; the index is counted once per run, below):',
    ...table(
      [
        'configuration',
        'prompt/answer',
        'answers (in+out)',
        ...(judged ? ['judge (in+out)'] : []),
        'query embeddings',
        ...(priced ? ['cost (USD)'] : []),
      ],
      estimate.configurations.map((c) => [
        configLabel(c.config),
        n(c.promptTokensPerQuestion),
        n(tokens(c.trial, 'generation')),
        ...(judged ? [n(tokens(c.trial, 'judge'))] : []),
        n(tokens(c.trial, 'embedding')),
        ...(priced ? [usd(c.trial.cost_usd)] : []),
      ]),
    ),
    '',
    'Indexes (chunking · embedding model), each built once:',
    ...table(
      ['index', 'tokens', ...(priced ? ['cost (USD)'] : [])],
      estimate.indexes.map((i) => [i.index, n(i.tokens), ...(priced ? [usd(i.costUsd)] : [])]),
    ),
    '',
    estimate.exhaustive
      ? `Total of the run (all ${estimate.trials} configurations):`
      : `Total of the run, at most (the ${estimate.trials} costliest of ${estimate.configurations.length} configurations):`,
    ...table(
      ['role · model', 'calls', 'prompt', 'completion', ...(priced ? ['cost (USD)'] : [])],
      [
        ...estimate.total.models.map((m) => [
          `${m.role} · ${m.model_id}`,
          n(m.calls),
          n(m.prompt_tokens),
          n(m.completion_tokens),
          ...(priced ? [usd(m.cost_usd)] : []),
        ]),
        [
          'all',
          '',
          n(estimate.total.prompt_tokens),
          n(estimate.total.completion_tokens),
          ...(priced ? [usd(estimate.total.cost_usd)] : []),
        ],
      ],
    ),
    ...(priced && estimate.total.cost_usd === undefined
      ? ['  (no total cost: the price table misses some models)']
      : []),
    '',
    'Assumptions:',
    ...estimate.assumptions.map((a) => `  - ${a}`),
  ];
  return lines;
}

/** Runs the dry run: prints the estimate (or its JSON) and returns exit code 0. */
export async function dryRunExperiment(given: DryRunInput, json: boolean, io: Io): Promise<number> {
  const { estimate, documents, warnings } = await estimateExperiment(given);
  if (json) {
    io.out(jsonLine({ dryRun: true, documents, warnings, ...estimate }));
    return 0;
  }
  for (const line of renderEstimate(estimate, documents, warnings)) io.out(line);
  return 0;
}
