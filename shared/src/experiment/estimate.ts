/**
 * The token (and cost) estimate of an experiment before it runs (`ai4rag experiment --dry-run`): from the corpus
 * size, the questions and the search space only — no model is called. Pure and synchronous.
 *
 * What it assumes, per trial of a configuration (tokens are ceil(characters / 4), as ai4rag and the chunkers count):
 * - index: built once per distinct (chunking, embedding model), embedding the corpus scaled by the overlap,
 *   ceil(corpus tokens × chunk_size / (chunk_size − chunk_overlap)) (hierarchical: its children; the parents are
 *   not embedded); semantic chunking also embeds every sentence with its buffer of neighbours before it cuts, so
 *   its index costs corpus tokens × (1 + 2 × buffer_size + 1); no index or result reused from an earlier run;
 * - queries: every question embedded once per trial;
 * - answers: per question, the prompt is the templates rendered around the question with k passages (k ×
 *   (2 × window_size + 1) with window retrieval) of chunk_size tokens each (parent_chunk_size for hierarchical:
 *   the passages are the parents; at most the whole index), and the
 *   completion is the maximum completion tokens (1024 by default: an upper bound, answers are usually shorter);
 * - judge (when set): per question, its prompt with an answer of the maximum completion length, and a reply of at
 *   most 256 tokens;
 * - query transforms `multi_query` / `hyde`: per question, the transform's prompt and a reply of at most
 *   TRANSFORM_MAX_COMPLETION_TOKENS, by the foundation model (role `query_transform`); the extra searches'
 *   query embeddings (rewrites, the passage) are not counted;
 * - not counted: model pre-selection (more than 3 foundation or 2 embedding models), the embedding model's
 *   detection probes at start-up, and reranker calls.
 *
 * The optimizer picks `min(maxEvals, configurations)` of the configurations and which ones is only known as it
 * runs: when it can run them all the total is their sum; otherwise it is an upper bound — the most expensive
 * configurations, each counted with the most expensive indexes they could build.
 */

import { METHOD_LIMITS } from '../chunking/limits.js';
import type { ChunkingOptions } from '../chunking/types.js';
import { JUDGE_MAX_COMPLETION_TOKENS, judgePrompt } from '../evaluation/judge.js';
import { buildMessages, DEFAULT_TEMPLATES, type PromptTemplates } from '../generation/templates.js';
import { approxTextTokens, type PriceTable } from '../pricing.js';
import {
  DEFAULT_MULTI_QUERY_COUNT,
  hydeMessages,
  multiQueryMessages,
  TRANSFORM_MAX_COMPLETION_TOKENS,
} from '../retrieval/query-transform.js';
import { GENERATION_DEFAULTS, trialSettings } from './params.js';
import type { TrialConfig, UsageSummary } from './types.js';
import { embeddingUsage, type ModelUsageInput, summarizeUsage } from './usage.js';

/** What the estimate is computed from. */
export interface EstimateInput {
  /** Characters of the text of every document (as loaded: what the chunkers split). */
  corpusCharacters: number;
  /** The benchmark questions the trials answer (after sampling). */
  questions: readonly string[];
  /** The valid configurations of the search space. */
  candidates: readonly TrialConfig[];
  /** The trial budget (`maxEvals`). */
  maxEvals: number;
  judgeModel?: string;
  /** @default DEFAULT_TEMPLATES (what the trials send) */
  templates?: PromptTemplates;
  /** Completion tokens assumed per answer. @default GENERATION_DEFAULTS.maxCompletionTokens (1024) */
  maxCompletionTokens?: number;
  prices?: PriceTable;
}

/** The estimate of one configuration's trial. */
export interface ConfigurationEstimate {
  config: TrialConfig;
  /** The index it needs: `<method> <chunk_size>/<chunk_overlap> · <embedding model>`. */
  index: string;
  /** Tokens of building that index (counted once per run in the totals). */
  indexTokens: number;
  /** Prompt tokens of one answer. */
  promptTokensPerQuestion: number;
  /** The trial without building its index: answers, judge, query embeddings. */
  trial: UsageSummary;
}

/** The estimate of one distinct index. */
export interface IndexEstimate {
  index: string;
  embeddingModel: string;
  tokens: number;
  /** USD when the embedding model is priced. */
  costUsd?: number;
}

/** The estimate of a whole run. */
export interface RunEstimate {
  /** Trials the run evaluates: min(maxEvals, configurations). */
  trials: number;
  configurations: ConfigurationEstimate[];
  indexes: IndexEstimate[];
  /** The whole run, per model and role. */
  total: UsageSummary;
  /** True when the run evaluates every configuration (the total is their sum, not a bound). */
  exhaustive: boolean;
  corpusTokens: number;
  questions: number;
  completionTokensPerAnswer: number;
  /** What the estimate assumes, in words. */
  assumptions: string[];
}

/** Characters of the messages sent for a question with `passages` empty passages (the template scaffold). */
function scaffoldCharacters(
  templates: PromptTemplates,
  question: string,
  passages: number,
): number {
  return buildMessages(
    templates,
    question,
    Array.from({ length: passages }, () => ({ text: '' })),
  ).reduce((n, m) => n + m.content.length, 0);
}

/** What tells two indexes of one method apart besides size and overlap: the parent size, the breakpoints. */
function methodLabel(c: ChunkingOptions): string {
  if (c.method === 'hierarchical') return ` ⊂ ${c.parentChunkSize}`;
  if (c.method !== 'semantic') return '';
  const bp = [c.breakpoint, c.breakpointAmount].filter((v) => v !== undefined).join(' ');
  return bp === '' ? '' : ` ${bp}`;
}

function indexKey(config: TrialConfig): {
  key: string;
  /** Tokens of the chunks stored (the whole index a context can come from). */
  chunkTokens: (corpusTokens: number) => number;
  /** Tokens embedded to build the index: the chunks, and semantic chunking's sentence groups. */
  tokens: (corpusTokens: number) => number;
} {
  const s = trialSettings(config);
  const c = s.chunking;
  const { method, chunkSize, chunkOverlap } = c;
  // Semantic: each sentence is embedded with `buffer` neighbours per side before the chunks are.
  const groups =
    method === 'semantic' ? 2 * (c.bufferSize ?? METHOD_LIMITS.DEFAULT_BUFFER_SIZE) + 1 : 0;
  const chunkTokens = (corpusTokens: number) =>
    Math.ceil((corpusTokens * chunkSize) / (chunkSize - chunkOverlap));
  return {
    key: `${method} ${chunkSize}/${chunkOverlap}${methodLabel(c)} · ${s.embeddingModel}`,
    chunkTokens,
    tokens: (corpusTokens) => chunkTokens(corpusTokens) + groups * corpusTokens,
  };
}

/** Cost if every model is priced, else the token count: the measure configurations are ranked by. */
function weight(u: UsageSummary): number {
  return u.cost_usd ?? u.prompt_tokens + u.completion_tokens;
}

/**
 * Estimates the tokens (and cost, with a price table) of an experiment run; see the module comment for what it
 * assumes. Calls no model.
 * @example estimateRun({ corpusCharacters: 40_000, questions, candidates, maxEvals: 8, prices }).total.cost_usd
 */
export function estimateRun(input: EstimateInput): RunEstimate {
  const templates = input.templates ?? DEFAULT_TEMPLATES;
  const completion = input.maxCompletionTokens ?? GENERATION_DEFAULTS.maxCompletionTokens;
  const corpusTokens = Math.ceil(input.corpusCharacters / 4);
  const indexes = new Map<string, IndexEstimate>();
  const configurations = input.candidates.map((config): ConfigurationEstimate => {
    const s = trialSettings(config);
    const index = indexKey(config);
    const indexTokens = index.tokens(corpusTokens);
    if (!indexes.has(index.key)) {
      const priced = summarizeUsage(
        [{ ...embeddingUsage(s.embeddingModel, []), calls: 1, promptTokens: indexTokens }],
        input.prices,
      );
      indexes.set(index.key, {
        index: index.key,
        embeddingModel: s.embeddingModel,
        tokens: indexTokens,
        ...(priced.cost_usd !== undefined && { costUsd: priced.cost_usd }),
      });
    }
    const r = s.retrieval;
    const passages = r.numberOfChunks * (r.method === 'window' ? 2 * r.windowSize + 1 : 1);
    const passageTokens = s.chunking.parentChunkSize ?? s.chunking.chunkSize;
    const context = Math.min(passages * passageTokens, index.chunkTokens(corpusTokens));
    const prompts = input.questions.map(
      (q) => Math.ceil(scaffoldCharacters(templates, q, passages) / 4) + context,
    );
    const rows: ModelUsageInput[] = [
      {
        modelId: s.foundationModel,
        role: 'generation',
        calls: input.questions.length,
        promptTokens: prompts.reduce((a, b) => a + b, 0),
        completionTokens: completion * input.questions.length,
      },
      embeddingUsage(s.embeddingModel, input.questions),
    ];
    const t = r.queryTransform;
    if (t === 'multi_query' || t === 'hyde') {
      const messages = (q: string) =>
        t === 'hyde' ? hydeMessages(q) : multiQueryMessages(q, DEFAULT_MULTI_QUERY_COUNT);
      rows.push({
        modelId: s.foundationModel,
        role: 'query_transform',
        calls: input.questions.length,
        promptTokens: input.questions.reduce(
          (n, q) =>
            n +
            approxTextTokens(
              messages(q)
                .map((m) => m.content)
                .join(''),
            ),
          0,
        ),
        completionTokens: TRANSFORM_MAX_COMPLETION_TOKENS * input.questions.length,
      });
    }
    if (input.judgeModel !== undefined) {
      rows.push({
        modelId: input.judgeModel,
        role: 'judge',
        calls: input.questions.length,
        promptTokens: input.questions.reduce(
          (n, q) => n + approxTextTokens(judgePrompt(q, '')) + completion,
          0,
        ),
        completionTokens: JUDGE_MAX_COMPLETION_TOKENS * input.questions.length,
      });
    }
    return {
      config,
      index: index.key,
      indexTokens,
      promptTokensPerQuestion: Math.max(0, ...prompts),
      trial: summarizeUsage(rows, input.prices),
    };
  });
  const trials = Math.min(input.maxEvals, configurations.length);
  const exhaustive = trials === configurations.length;
  const chosen = exhaustive
    ? configurations
    : [...configurations].sort((a, b) => weight(b.trial) - weight(a.trial)).slice(0, trials);
  const indexList = [...indexes.values()];
  const built = exhaustive
    ? indexList.filter((i) => chosen.some((c) => c.index === i.index))
    : [...indexList]
        .sort((a, b) => (b.costUsd ?? b.tokens) - (a.costUsd ?? a.tokens))
        .slice(0, trials);
  const total = summarizeUsage(
    [
      ...chosen.flatMap((c) => c.trial.models),
      ...built.map((i) => ({
        ...embeddingUsage(i.embeddingModel, []),
        calls: 1,
        promptTokens: i.tokens,
      })),
    ],
    input.prices,
  );
  return {
    trials,
    configurations,
    indexes: indexList,
    total,
    exhaustive,
    corpusTokens,
    questions: input.questions.length,
    completionTokensPerAnswer: completion,
    assumptions: [
      'tokens are ceil(characters / 4), as ai4rag counts them; real tokenizers differ',
      'each distinct (chunking, embedding model) index is built once, embedding ceil(corpus tokens × chunk_size / (chunk_size − chunk_overlap)); nothing is reused from earlier runs',
      'every question is embedded once per trial',
      `an answer's prompt is the templates around the question and k passages of chunk_size tokens (at most the whole index); its completion is ${completion} tokens (the maximum: answers are usually shorter)`,
      ...(input.judgeModel === undefined
        ? []
        : [
            `the judge reads the question and an answer of ${completion} tokens and replies with at most ${JUDGE_MAX_COMPLETION_TOKENS} tokens`,
          ]),
      exhaustive
        ? `the run evaluates all ${configurations.length} configurations: the total is their sum`
        : `the optimizer picks ${trials} of ${configurations.length} configurations as it runs: the total is an upper bound (the ${trials} most expensive, with the ${built.length} most expensive indexes)`,
      'not counted: model pre-selection, the embedding model probes at start-up, reranker calls',
    ],
  };
}
