/**
 * The flags of the commands whose modules are heavy (chat, serve, score, experiment, optimizer-sim). `main` needs
 * every command's flags to parse a config file and to refuse unknown options, but loads a command's module only to
 * run it: `ai4rag ingest` or `search` never loads the experiment runner, the server or the CDK synth.
 */
import type { OptionSpec } from './args.js';
import { PRICES_OPTIONS } from './prices.js';
import { RERANK_OPTIONS } from './rerank.js';

/** Flags of `ai4rag chat`. */
export const CHAT_OPTIONS: OptionSpec = {
  collection: { type: 'string' },
  embedding: { type: 'string' },
  k: { type: 'string' },
  'search-mode': { type: 'string' },
  filter: { type: 'string' },
  model: { type: 'string' },
  pattern: { type: 'string' },
  ...PRICES_OPTIONS,
};

/** Flags of `ai4rag serve`. */
export const SERVE_OPTIONS: OptionSpec = {
  port: { type: 'string' },
  host: { type: 'string' },
  token: { type: 'string' },
  'documents-dir': { type: 'string' },
  pattern: { type: 'string' },
  collection: { type: 'string' },
  log: { type: 'boolean' },
  'log-file': { type: 'string' },
  concurrency: { type: 'string' },
  workers: { type: 'string' },
  'stop-timeout': { type: 'string' },
  ...RERANK_OPTIONS,
  ...PRICES_OPTIONS,
};

/** Options of `ai4rag score` (merged with the global options by `parse`). */
export const SCORE_OPTIONS: OptionSpec = {
  input: { type: 'string' },
  seed: { type: 'string' },
};

/** Flags of `ai4rag experiment`. */
export const EXPERIMENT_OPTIONS: OptionSpec = {
  docs: { type: 'string' },
  benchmark: { type: 'string' },
  'max-evals': { type: 'string' },
  optimizer: { type: 'string' },
  'search-space': { type: 'string' },
  seed: { type: 'string' },
  out: { type: 'string' },
  'record-table': { type: 'string' },
  'experiment-id': { type: 'string' },
  'trial-concurrency': { type: 'string' },
  workers: { type: 'string' },
  'foundation-models': { type: 'string' },
  'embedding-models': { type: 'string' },
  'sample-questions': { type: 'string' },
  metric: { type: 'string' },
  'judge-model': { type: 'string' },
  citations: { type: 'boolean' },
  quiet: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  ...RERANK_OPTIONS,
  ...PRICES_OPTIONS,
};

/** Flags of `ai4rag optimizer-sim`. */
export const OPTIMIZER_SIM_OPTIONS: OptionSpec = {
  scores: { type: 'string' },
  optimizer: { type: 'string' },
  'max-evals': { type: 'string' },
  seeds: { type: 'string' },
  'batch-size': { type: 'string' },
};
