/**
 * The experiment ledger: what an experiment has decided and measured, kept in the object store so that every
 * step (a Lambda in the cloud, a local task) can run in a fresh process and a re-run resumes. One writer per
 * object: `state.json` is written by prepare, propose and record only (never concurrently: the state machine
 * runs them one at a time); each trial writes its own files.
 */
import type { LoadedDocument } from '../documents/types.js';
import type { BenchmarkQuestion } from '../evaluation/benchmark.js';
import { getJson, type ObjectStore, putJson } from '../ports/object-store.js';
import type { ExperimentInput } from './input.js';
import type {
  EvaluationRecord,
  Observation,
  PatternPayload,
  StatusEvent,
  TrialConfig,
  TrialRecord,
  UsageSummary,
} from './types.js';

/** Root prefix of all experiments in the artifacts store. */
export const EXPERIMENTS_PREFIX = 'experiments/';
/** Index markers shared by experiments (an index is a function of corpus + indexing params). */
export const INDEX_MARKERS_PREFIX = 'indexes/';
/** Result cache shared by experiments. */
export const RESULT_CACHE_PREFIX = 'cache/results/';

/** Where one experiment keeps its objects. */
export function experimentPrefix(experimentId: string): string {
  return `${EXPERIMENTS_PREFIX}${experimentId}/`;
}

/** Object keys of an experiment, relative to nothing (full keys). */
export function ledgerKeys(prefix: string) {
  return {
    state: `${prefix}state.json`,
    documents: `${prefix}documents.json`,
    benchmark: `${prefix}benchmark.json`,
    trial: (trialId: string) => `${prefix}trials/${trialId}.json`,
    trialResult: (trialId: string) => `${prefix}trials/${trialId}.result.json`,
    /** The embedding tokens of the index a trial built (zero when it reused one). */
    indexUsage: (trialId: string) => `${prefix}trials/${trialId}.index-usage.json`,
    events: `${prefix}events/`,
    batches: (trialId: string) => `${prefix}batches/${trialId}/`,
    pattern: (name: string) => `${prefix}patterns/${name}/pattern.json`,
    patternEvaluation: (name: string) => `${prefix}patterns/${name}/evaluation_results.json`,
    leaderboard: `${prefix}leaderboard.json`,
    bestPattern: `${prefix}pattern.json`,
    evaluationResults: `${prefix}evaluation_results.json`,
    report: `${prefix}report.html`,
    reportData: `${prefix}report-data.json`,
  };
}

/** A trial in the ledger. */
export interface LedgerTrial extends TrialRecord {
  trialId: string;
  status: 'running' | 'done' | 'failed';
  collection?: string;
}

/** `state.json`. */
export interface ExperimentState {
  version: 1;
  experimentId: string;
  createdAt: string;
  input: ExperimentInput;
  optimizer: string;
  storeKind: string;
  corpus: { hash: string; documents: number; keys: number };
  benchmark: { hash: string; questions: number };
  /** Valid combinations of the search space, enumeration order. */
  candidates: TrialConfig[];
  maxCombinations: number;
  knownObservations: Observation[];
  /** Embedding dimension per embedding model id. */
  embeddingDimensions: Record<string, number>;
  trials: LedgerTrial[];
  /** Built indexes of this experiment: collection → true. */
  indexes: Record<string, true>;
  rounds: number;
  finished: boolean;
}

/** A proposed trial, written by propose and read by index and evaluate. */
export interface TrialPlan {
  trialId: string;
  patternName: string;
  iteration: number;
  config: TrialConfig;
  collection: string;
  indexing: unknown;
  rag: unknown;
  cacheKey: string;
}

/** What evaluate writes for a successful trial. */
export interface TrialResultFile {
  trialId: string;
  score: number;
  pattern: PatternPayload;
  evaluation: EvaluationRecord[];
  durationSeconds: number;
  /** Tokens of the evaluation per model and role (unpriced: finalize prices them). */
  usage?: UsageSummary;
}

/** Reads `state.json`. */
export function readState(store: ObjectStore, prefix: string): Promise<ExperimentState> {
  return getJson<ExperimentState>(store, ledgerKeys(prefix).state);
}

/** Writes `state.json`. */
export function writeState(
  store: ObjectStore,
  prefix: string,
  state: ExperimentState,
): Promise<void> {
  return putJson(store, ledgerKeys(prefix).state, state);
}

/** Parsed documents of the experiment. */
export function readDocuments(store: ObjectStore, prefix: string): Promise<LoadedDocument[]> {
  return getJson<LoadedDocument[]>(store, ledgerKeys(prefix).documents);
}

/** Benchmark questions (keys already matched to document keys). */
export function readBenchmark(store: ObjectStore, prefix: string): Promise<BenchmarkQuestion[]> {
  return getJson<BenchmarkQuestion[]>(store, ledgerKeys(prefix).benchmark);
}

/** Every status event of the experiment, in time order. */
export async function readEvents(store: ObjectStore, prefix: string): Promise<StatusEvent[]> {
  const keys = await store.list(ledgerKeys(prefix).events);
  const out: StatusEvent[] = [];
  for (const key of keys) out.push(...(await getJson<StatusEvent[]>(store, key)));
  return out;
}
