/**
 * Shapes of the experiment catalog that the web app of `ai4rag serve` reads as JSON (`web/src/types.ts` re-exports
 * them), kept free of imports so the browser bundle and its typecheck take nothing else. `catalog.ts` re-exports
 * them.
 */

/** One trial of an experiment as the catalog shows it. */
export interface CatalogTrial {
  trial_id: string;
  pattern_name: string;
  iteration: number;
  status: 'running' | 'done' | 'failed';
  score: number | null;
  cached: boolean;
  config: Record<string, unknown>;
  duration_seconds: number;
  collection?: string;
  error?: string;
}

/** A collection known to the store: the served knowledge base's, others with document statuses, and indexes. */
export interface CollectionInfo {
  name: string;
  kind: 'knowledge_base' | 'experiment_index';
  /** Chunks in the index when it was built (experiment indexes). */
  chunks?: number;
  embedding_model?: string;
  /** Experiments whose trials use this index. */
  experiments: string[];
}
