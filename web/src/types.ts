/** Shapes of the API answers the page reads (see shared/src/api/schemas.ts and shared/src/experiment/catalog.ts). */
import type { CatalogTrial, CollectionInfo } from '../../shared/src/experiment/catalog-types.js';

export interface ReferenceDocument {
  document_key: string;
  sequence_number: number;
  text: string;
  score: number | null;
  chunk_ids: string[];
}

export interface Citation {
  marker: number;
  document_key: string;
  chunk_id: string;
  start: number;
  end: number;
}

export interface Timing {
  retrieve_ms: number;
  rerank_ms: number;
  generate_ms: number;
  total_ms: number;
  transform_ms?: number;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface AnswerDone {
  timing: Timing;
  model?: string;
  usage?: Usage;
  cost_usd?: number;
  citations?: Citation[];
  removed_citations?: number;
}

export interface GenerateResponse extends AnswerDone {
  answer: string;
  reference_documents: ReferenceDocument[];
  warnings?: string[];
  conversation?: { role: 'system' | 'user' | 'assistant'; content: string }[];
}

export interface SearchHit {
  id: string;
  document_key: string;
  score: number | null;
}

export interface ServerConfig {
  collection: string;
  store: string;
  chunks: number;
  embedding_model: string;
  serving_pattern?: true;
  rerank_available: boolean;
  suggestion?: {
    experiment_id: string;
    pattern_name: string;
    score: number;
    metric: string;
    collection: string;
  };
}

export interface DocumentView {
  document_key: string;
  status: 'pending' | 'indexed' | 'failed';
  content_hash: string | null;
  chunk_count: number;
  updated_at: string | null;
  error?: string;
}

export interface Stats {
  collection: string;
  store: string;
  documents: number;
  chunks: number;
  dimension: number | null;
  embedding_model: string | null;
  /** Bytes the collection's tables take on disk (PostgreSQL stores; null for Milvus or no collection yet). */
  size_bytes: number | null;
  by_status: Record<string, number>;
}

export type { CollectionInfo };

export interface RunInfo {
  status: 'running' | 'failed' | 'finished';
  started_at: string;
  state?: string;
  error?: string;
}

export interface ExperimentSummary {
  experiment_id: string;
  created_at?: string;
  status: 'finished' | 'incomplete';
  optimizer?: string;
  optimization_metric?: string;
  max_evals?: number;
  trials: { done: number; failed: number; running: number; cached: number };
  best?: { pattern_name: string; score: number };
  questions?: number;
  documents?: number;
  collections: string[];
  run?: RunInfo;
}

export interface PatternSettings {
  vector_store_binding: { collection_name: string };
  chunking: { method: string; chunk_size: number; chunk_overlap: number };
  embedding: { model_id: string };
  retrieval: {
    method: string;
    number_of_chunks: number;
    search_mode: string;
    window_size?: number;
    ranker_strategy?: string;
    ranker_k?: number;
    ranker_alpha?: number;
    reranker?: { model_id: string; candidates: number };
    query_transform?: string;
  };
  generation: { model_id: string };
}

export interface LeaderboardEntry {
  rank: number;
  pattern_name: string;
  score: number;
  cached?: true;
  pattern: { name: string; settings: PatternSettings };
}

export type { CatalogTrial };

export interface StatusEvent {
  level: 'info' | 'warning' | 'error';
  message: string;
  time: string;
}

export interface ExperimentDetail extends ExperimentSummary {
  trials_list: CatalogTrial[];
  leaderboard?: LeaderboardEntry[];
  events: StatusEvent[];
}

export interface EvaluationRecord {
  question_id: string;
  question: string;
  correct_answers: string[];
  answer: string;
  metrics: { name: string; score: number | null }[];
  error?: string;
}
