/**
 * Shapes of an optimization experiment: what a trial is, what it produces, what the event sink receives and what
 * the artefacts hold. Field names of payloads and artefacts are ai4rag's (snake_case, spec 5.4) so that tools built
 * for ai4rag's outputs read ours.
 */
import type { MetricScores } from '../evaluation/score.js';

/** Level of a status event (ai4rag's `LogLevel`). */
export type LogLevel = 'info' | 'warning' | 'error';

/** Steps named in status events (ai4rag's `ExperimentStep` values). */
export type ExperimentStep =
  | 'model selection'
  | 'chunking'
  | 'embedding'
  | 'generation'
  | 'evaluation'
  | 'optimization';

/** One `on_status_change` call, with the time it happened (ISO 8601). */
export interface StatusEvent {
  level: LogLevel;
  message: string;
  step?: ExperimentStep;
  time: string;
}

/** One aggregate metric of a pattern, as in the pattern payload. */
export interface PatternMetric {
  name: string;
  evaluator: string;
  description?: string;
  scores: MetricScores;
  /** The judge model, for judge metrics. */
  model_id?: string;
  optimization_metric?: true;
}

/** Settings of a pattern (spec 5.4 `settings`): everything needed to rebuild its index and serve it. */
export interface PatternSettings {
  vector_store_binding: { provider_type: string; collection_name: string };
  chunking: {
    method: string;
    chunk_size: number;
    chunk_overlap: number;
    include_metadata: boolean;
    /** `hierarchical`: the parent chunk size (the children are `chunk_size`). */
    parent_chunk_size?: number;
    /** `semantic`: the breakpoint type, when the search space set one (else the chunker's default). */
    semantic_breakpoint?: string;
    /** `semantic`: the breakpoint amount, when the search space set one (else the chunker's default). */
    semantic_breakpoint_amount?: number;
  };
  embedding: {
    model_id: string;
    embedding_params: { embedding_dimension: number; context_length: number | null };
  };
  retrieval: {
    method: string;
    number_of_chunks: number;
    search_mode: string;
    window_size?: number;
    ranker_strategy?: string;
    ranker_k?: number;
    ranker_alpha?: number;
    /** Cross-encoder reranking of `candidates` fused passages down to `number_of_chunks`. */
    reranker?: { model_id: string; candidates: number };
    /** A query transform (`multi_query`, `hyde`, `rm3`) whose results are fused with the query's; absent: none. */
    query_transform?: string;
  };
  generation: {
    model_id: string;
    temperature: number;
    max_completion_tokens: number;
    context_template_text: string;
    user_message_text: string;
    system_message_text: string;
    language: { code: string; name: string };
  };
}

/** The `on_pattern_creation` payload (spec 5.4), also the content of `pattern.json`. */
export interface PatternPayload {
  name: string;
  max_combinations: number;
  evaluation: { metrics: PatternMetric[] };
  duration_seconds: number;
  settings: PatternSettings;
  iteration: number;
}

/** One question's record in `evaluation_results.json` (spec 5.4), plus its error when it failed. */
export interface EvaluationRecord {
  question_id: string;
  question: string;
  correct_answers: string[];
  answer: string;
  answer_contexts: { text: string; document_key: string }[];
  metrics: { name: string; evaluator: string; score: number | null }[];
  /** Set when this question could not be answered or scored; the trial still counts. */
  error?: string;
}

/** What a model was used for in a trial. */
export type UsageRole = 'generation' | 'query_transform' | 'judge' | 'embedding';

/** The tokens one model spent in one role, and their cost when the price table knows the model. */
export interface ModelUsage {
  model_id: string;
  role: UsageRole;
  /** Calls counted: questions answered (generation), answers judged, texts embedded (chunks and questions). */
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** Calls whose tokens the model did not report: they are not in the counts. */
  unreported_calls?: number;
  /** Counted as ceil(characters / 4) of the texts sent, not reported by the model (embeddings). */
  approximate?: true;
  /** USD by the experiment's price table (local models 0); absent without a table or a price for the model. */
  cost_usd?: number;
}

/** The tokens of a trial, or of a set of trials, per model and in total. */
export interface UsageSummary {
  models: ModelUsage[];
  prompt_tokens: number;
  completion_tokens: number;
  /** Sum of the models' costs; present only when the price table knows every model. */
  cost_usd?: number;
}

/** The tokens and cost of an experiment. */
export interface ExperimentUsage {
  /** What the trials evaluated in this run spent. */
  spent: UsageSummary;
  /** What the trials answered from the result cache originally cost (nothing was spent again). */
  cached: UsageSummary;
  /** Trials without a usage record (failed trials; cache entries from before tokens were recorded). */
  trials_without_usage: number;
  /** Whether a price table was given (costs are computed only with one). */
  priced: boolean;
}

/** A configuration of the search space: parameter name → value (models as `{ modelId }`). */
export type TrialConfig = Record<string, unknown>;

/** An observed trial as the optimizers see it: `score` null for a failed trial. */
export interface Observation {
  config: TrialConfig;
  score: number | null;
}

/** The outcome of one trial, successful or not. */
export interface TrialRecord {
  /** `Pattern<n>`, numbered in evaluation order (offset by known observations). */
  pattern_name: string;
  iteration: number;
  config: TrialConfig;
  /** Optimization-metric mean; null when the trial failed. */
  score: number | null;
  /** Set when the trial failed (`<ErrorName>: <message>`). */
  error?: string;
  /** The pattern payload of a successful trial. */
  pattern?: PatternPayload;
  /** Whether the score came from the result cache (no work done). */
  cached?: boolean;
  duration_seconds: number;
  /**
   * Tokens (and cost) of the trial's evaluation; a cached trial carries what its original evaluation cost (marked
   * by `cached`, nothing was spent again). Absent for failed trials.
   */
  usage?: UsageSummary;
}

/** One row of `leaderboard.json`: successful patterns, best first. */
export interface LeaderboardEntry {
  rank: number;
  pattern_name: string;
  score: number;
  pattern: PatternPayload;
  /** The trial's tokens and cost (see {@link TrialRecord.usage}). */
  usage?: UsageSummary;
  /** The trial was answered from the result cache: `usage` is what its original evaluation cost. */
  cached?: true;
}

/**
 * Everything the HTML report shows. Built by the experiment's finalize step; the report renders it without
 * any other input.
 */
export interface ReportData {
  experiment_id: string;
  created_at: string;
  optimizer: string;
  optimization_metric: string;
  max_combinations: number;
  /** Evaluated trials in order, failed ones included. */
  trials: TrialRecord[];
  leaderboard: LeaderboardEntry[];
  /** Per-question records of the best pattern. */
  best_evaluation: EvaluationRecord[];
  /**
   * Per-question records of the rank-2 pattern, which the report compares with the best one; absent with fewer
   * than two successful patterns and in report data written before it was recorded.
   */
  runner_up_evaluation?: EvaluationRecord[];
  events: StatusEvent[];
  /** Number of benchmark questions and documents. */
  questions: number;
  documents: number;
  /** Tokens and cost of the whole experiment (absent in reports written before tokens were recorded). */
  usage?: ExperimentUsage;
}
