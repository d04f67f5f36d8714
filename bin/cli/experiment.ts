/**
 * `ai4rag experiment` (a RAG-optimization experiment through the synthesized state machine, locally) and
 * `ai4rag optimizer-sim` (replays optimizers over a recorded score table).
 */
import { copyFile, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createLocalRuntime } from '../../functions/_shared/runtime.js';
import { DEFAULT_DATA_DIR, ENV } from '../../shared/src/config.js';
import { ValidationError } from '../../shared/src/errors.js';
import { parseBenchmark } from '../../shared/src/evaluation/benchmark.js';
import {
  EXPERIMENT_ID,
  type ExperimentInput,
  ExperimentInputSchema,
} from '../../shared/src/experiment/input.js';
import { experimentPrefix, ledgerKeys, readState } from '../../shared/src/experiment/ledger.js';
import {
  DEFAULT_EXPERIMENT_EMBEDDING_MODELS,
  DEFAULT_EXPERIMENT_FOUNDATION_MODELS,
  type ExperimentArtefacts,
  experimentCandidates,
} from '../../shared/src/experiment/steps.js';
import type {
  ExperimentUsage,
  LeaderboardEntry,
  PatternPayload,
  ReportData,
  StatusEvent,
  UsageSummary,
} from '../../shared/src/experiment/types.js';
import { OPTIMIZER_NAMES, type OptimizerName } from '../../shared/src/optimizer/optimizers.js';
import { parseScoreTable, simulateOptimizer } from '../../shared/src/optimizer/simulate.js';
import { getJson, putJson } from '../../shared/src/ports/object-store.js';
import { STORE_KINDS, type StoreKind } from '../../shared/src/runtime/open-store.js';
import { oneOf, optInt, type Parsed, str } from './args.js';
import { poolFor, usePool, workersOption } from './cpu-runtime.js';
import { dryRunExperiment } from './dry-run.js';
import { jsonLine } from './json.js';
import { LocalExecutionError, runLocalExperiment } from './local-state-machine.js';
import { EXPERIMENT_OPTIONS, OPTIMIZER_SIM_OPTIONS } from './option-specs.js';
import { cliPrices } from './prices.js';
import { ExperimentProgress } from './progress.js';
import { experimentRerank } from './rerank.js';

/** Parsed by the command; defined beside the other commands' flags so `main` loads this module only to run it. */
export { EXPERIMENT_OPTIONS, OPTIMIZER_SIM_OPTIONS };

type Io = { out(line: string): void; err(line: string): void };

/** The four artefacts of an experiment, as copied to `--out`. */
const ARTEFACTS = ['leaderboard.json', 'pattern.json', 'evaluation_results.json', 'report.html'];

function list(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return items.length > 0 ? items : undefined;
}

async function readJsonFile(path: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read ${what} "${path}": ${(error as Error).message}`, {
      cause: error,
    });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`${what} "${path}" is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

function describeConfig(p: PatternPayload): string {
  const s = p.settings;
  const r = s.retrieval;
  const ranker =
    r.search_mode === 'hybrid'
      ? ` ${r.ranker_strategy ?? ''}${r.ranker_k !== undefined ? ` k=${r.ranker_k}` : ''}${r.ranker_alpha !== undefined ? ` α=${r.ranker_alpha}` : ''}`
      : '';
  const rerank = r.reranker ? ` · rerank ${r.reranker.candidates} with ${r.reranker.model_id}` : '';
  return `${s.chunking.method} ${s.chunking.chunk_size}/${s.chunking.chunk_overlap}${s.chunking.parent_chunk_size === undefined ? '' : ` ⊂ ${s.chunking.parent_chunk_size}`} · ${r.search_mode}${ranker} · ${r.number_of_chunks} chunks${rerank}`;
}

/** `12,345 tokens (12,000 prompt + 345 completion), $0.0123` — the cost only when every model is priced. */
function summaryText(u: UsageSummary, priced: boolean): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const unpriced = u.models.filter((m) => m.cost_usd === undefined).map((m) => m.model_id);
  const cost = !priced
    ? ''
    : u.cost_usd !== undefined
      ? `, $${u.cost_usd}`
      : `, cost unknown (no price for ${[...new Set(unpriced)].join(', ')})`;
  return `${n(u.prompt_tokens + u.completion_tokens)} tokens (${n(u.prompt_tokens)} prompt + ${n(u.completion_tokens)} completion)${cost}`;
}

/** The experiment's tokens (and cost) as printed after the trials. */
export function usageLines(usage: ExperimentUsage): string[] {
  const lines = [`Tokens spent: ${summaryText(usage.spent, usage.priced)}`];
  if (usage.cached.models.length > 0) {
    lines.push(
      `Cached trials (their original cost, not spent again): ${summaryText(usage.cached, usage.priced)}`,
    );
  }
  return lines;
}

/** The flag that sets each field of the experiment input, so an invalid value is reported as the user typed it. */
const INPUT_FLAGS: Record<string, string> = {
  experimentId: '--experiment-id',
  maxEvals: '--max-evals',
  optimizer: '--optimizer',
  seed: '--seed',
  trialConcurrency: '--trial-concurrency',
  benchmarkSampleSize: '--sample-questions',
  foundationModels: '--foundation-models',
  embeddingModels: '--embedding-models',
  optimizationMetric: '--metric',
  judgeModel: '--judge-model',
  prices: '--prices',
  searchSpace: '--search-space',
};

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const k of path) v = (v as Record<PropertyKey, unknown> | undefined)?.[k];
  return v;
}

/** What the flags name, for the messages: the file behind --search-space / --prices, the benchmark files. */
interface FlagFiles {
  searchSpace?: string;
  prices?: string;
  benchmarks: readonly string[];
}

function flagLabel(flag: string, files: FlagFiles): string {
  if (flag === '--search-space' && files.searchSpace !== undefined)
    return `--search-space ${files.searchSpace}`;
  if (flag === '--prices' && files.prices !== undefined) return `--prices ${files.prices}`;
  return flag;
}

/**
 * Checks everything the flags and files decide before the state machine starts (exit 2 on a problem), with the
 * messages naming the flag, and the search-space key as written in the file: the input's fields and ranges, the
 * metric's judge, the search-space overrides and that they leave a valid combination, each benchmark file, and
 * that the documents path holds a file. What only the documents' contents decide (their keys against the
 * benchmark's gold keys) is checked by the prepare step, also a validation error.
 * @throws {ValidationError} naming the flag and, for files, the field.
 */
export async function preflightExperiment(
  input: Record<string, unknown>,
  files: FlagFiles,
  docsPath: string,
  storeKind: StoreKind,
  defaultModels?: { foundationModels?: readonly string[]; embeddingModels?: readonly string[] },
): Promise<{ input: ExperimentInput; combinations: number }> {
  const parsed = ExperimentInputSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => {
      const [field, ...rest] = i.path;
      const flag = INPUT_FLAGS[String(field)] ?? String(field);
      if (field === 'searchSpace' && rest.length === 0 && /models/.test(i.message)) {
        return `${flagLabel(flag, files)}: "foundation_model" and "embedding_model" are not search-space keys; give the models with --foundation-models / --embedding-models`;
      }
      const where = rest.length > 0 ? ` ${rest.map(String).join('.')}` : '';
      const got = rest.length === 0 || field === 'searchSpace' ? valueAt(input, i.path) : undefined;
      return `${flagLabel(flag, files)}${where}: ${i.message.replace(/^Invalid input: /, '')}${got !== undefined ? ` (got ${JSON.stringify(got)})` : ''}`;
    });
    throw new ValidationError(problems.join('; '));
  }
  const valid = parsed.data;
  if (valid.optimizationMetric === 'answer_relevance' && valid.judgeModel === undefined) {
    throw new ValidationError(
      '--metric answer_relevance needs --judge-model ID (the chat model that judges the answers)',
    );
  }
  let combinations: number;
  try {
    combinations = experimentCandidates(
      valid,
      valid.foundationModels ??
        defaultModels?.foundationModels ?? [...DEFAULT_EXPERIMENT_FOUNDATION_MODELS],
      (
        valid.embeddingModels ??
        defaultModels?.embeddingModels ?? [...DEFAULT_EXPERIMENT_EMBEDDING_MODELS]
      ).map((modelId) => ({ modelId })),
      storeKind,
    ).length;
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const message = error.message.replace(/^Invalid search space overrides: /, '');
    const label =
      files.searchSpace !== undefined ? `--search-space ${files.searchSpace}` : 'search space';
    throw new ValidationError(
      /no valid combination/.test(message)
        ? `${label}: no configuration satisfies the search-space rules (e.g. window_size 0 needs retrieval_method simple, window_size ≥ 1 needs window; ranker_k applies to rrf, ranker_alpha to weighted; hybrid and semantic chunking need chunk_overlap 0, the other methods > 0; hierarchical needs parent_chunk_size > chunk_size and retrieval_method simple, other methods parent_chunk_size 0)`
        : `${label}: ${message}`,
      { cause: error },
    );
  }
  if (!(await hasFile(docsPath))) throw new ValidationError(`--docs "${docsPath}" holds no files`);
  return { input: valid, combinations };
}

async function hasFile(path: string): Promise<boolean> {
  const info = await stat(path);
  if (!info.isDirectory()) return true;
  const entries = await readdir(path, { recursive: true, withFileTypes: true });
  return entries.some((e) => e.isFile());
}

/**
 * The exit-2 form of a state machine that failed on its input in the prepare step (a gold key matching no
 * document, a search space the embedding model's context rules out): the prepare step's message, the internal
 * benchmark key replaced by the files given.
 */
function prepareValidationError(
  error: unknown,
  benchmarkKey: string,
  files: FlagFiles,
): ValidationError | undefined {
  if (!(error instanceof LocalExecutionError) || error.failure?.state !== 'Prepare')
    return undefined;
  if (!['ValidationError', 'SearchSpaceError', 'BenchmarkError'].includes(error.failure.error))
    return undefined;
  const text = error.failure.cause
    .replace(/^Prepare failed: /, '')
    .replaceAll(benchmarkKey, `--benchmark ${files.benchmarks.join(',')}`);
  return new ValidationError(text, { cause: error });
}

function timestamp(): string {
  return new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\..*$/, '')
    .replace('T', '-')
    .toLowerCase();
}

/**
 * `ai4rag experiment --docs PATH --benchmark FILE[,FILE] …`: runs the optimizer's state machine (the definition
 * synthesized from the CDK stack) locally, prints progress, the leaderboard and the tokens (and cost with
 * `--prices FILE`), and writes the artefacts. `--dry-run` prints the estimate of the run instead and calls no model.
 * @throws {ValidationError} for missing or bad flags and files.
 */
export async function cmdExperiment(p: Parsed, io: Io): Promise<number> {
  const docs = str(p, 'docs');
  const benchmarks = list(str(p, 'benchmark'));
  if (docs === undefined) throw new ValidationError('--docs PATH is required (a folder or a file)');
  if (benchmarks === undefined) {
    throw new ValidationError('--benchmark FILE is required (JSON array; several: a,b)');
  }
  const docsPath = resolve(docs);
  const info = await stat(docsPath).catch(() => undefined);
  if (!info) throw new ValidationError(`--docs "${docs}" does not exist`);
  const documentsDir = info.isDirectory() ? docsPath : dirname(docsPath);
  const documentsPrefix = info.isDirectory() ? '' : basename(docsPath);
  const questions: unknown[] = [];
  for (const file of benchmarks) {
    const data = await readJsonFile(file, 'benchmark');
    if (!Array.isArray(data)) throw new ValidationError(`--benchmark ${file} must be a JSON array`);
    // Each file on its own, so a problem is reported in the file (and item) the user wrote.
    parseBenchmark(data, `--benchmark ${file}`);
    questions.push(...data);
  }
  const recordTable = str(p, 'record-table');
  const experimentId = str(p, 'experiment-id') ?? `exp-${timestamp()}`;
  if (!EXPERIMENT_ID.test(experimentId)) {
    throw new ValidationError(
      `--experiment-id "${experimentId}": letters, digits, - and _ only, at most 63, starting with a letter or digit`,
    );
  }
  const dataDir = resolve(str(p, 'data-dir') ?? DEFAULT_DATA_DIR);
  const optimizer = recordTable !== undefined ? 'random' : str(p, 'optimizer');
  if (optimizer !== undefined && !(OPTIMIZER_NAMES as readonly string[]).includes(optimizer)) {
    throw new ValidationError(`--optimizer must be one of ${OPTIMIZER_NAMES.join(', ')}`);
  }
  const searchSpaceFile = str(p, 'search-space');
  const searchSpace =
    searchSpaceFile === undefined ? undefined : await readJsonFile(searchSpaceFile, 'search space');
  const rerank = experimentRerank(p, searchSpace);
  const prices = await cliPrices(p);
  const input: Record<string, unknown> = {
    experimentId,
    documentsPrefix,
    benchmarkKey: `experiments/${experimentId}/input/benchmark.json`,
    // Only when given: a resumed experiment keeps its budget unless told otherwise (the input's default is 8).
    ...(recordTable !== undefined
      ? { maxEvals: 1000 }
      : optInt(p, 'max-evals') !== undefined && { maxEvals: optInt(p, 'max-evals') }),
    ...(optimizer !== undefined && { optimizer }),
    ...(optInt(p, 'seed') !== undefined && { seed: optInt(p, 'seed') }),
    ...(optInt(p, 'trial-concurrency') !== undefined && {
      trialConcurrency: optInt(p, 'trial-concurrency'),
    }),
    ...(optInt(p, 'sample-questions') !== undefined && {
      benchmarkSampleSize: optInt(p, 'sample-questions'),
    }),
    ...(list(str(p, 'foundation-models')) && {
      foundationModels: list(str(p, 'foundation-models')),
    }),
    ...(list(str(p, 'embedding-models')) && { embeddingModels: list(str(p, 'embedding-models')) }),
    ...(str(p, 'metric') !== undefined && { optimizationMetric: str(p, 'metric') }),
    ...(str(p, 'judge-model') !== undefined && { judgeModel: str(p, 'judge-model') }),
    ...(p.values.citations === true && { citations: true }),
    ...(prices !== undefined && { prices }),
    ...(rerank.overrides !== undefined
      ? { searchSpace: { ...(searchSpace as object | undefined), ...rerank.overrides } }
      : searchSpace !== undefined && { searchSpace }),
  };
  const storeKind = oneOf<StoreKind>(p, 'store', STORE_KINDS, 'pglite');
  const files: FlagFiles = {
    benchmarks,
    ...(searchSpaceFile !== undefined && { searchSpace: searchSpaceFile }),
    ...(str(p, 'prices') !== undefined && { prices: str(p, 'prices') }),
  };
  const workers = workersOption(str(p, 'workers'));
  if (p.values['dry-run'] === true) {
    await preflightExperiment(input, files, docsPath, storeKind);
    // Before any store, runtime or model exists: the estimate calls nothing.
    return dryRunExperiment({ input, docsPath, questions }, p.values.json === true, io);
  }
  const trialConcurrency = (input.trialConcurrency as number | undefined) ?? 2;
  const quiet = p.values.quiet === true || p.values.json === true;
  const runtime = createLocalRuntime({
    dataDir,
    documentsDir,
    env: { ...ENV, ...rerank.env },
    store: storeKind,
  });
  // The trials' local embeddings in worker threads (one per core unless --workers says otherwise).
  const pool = poolFor(workers);
  if (pool !== undefined) usePool(runtime, pool);
  const deployed = runtime.config.deployedModels;
  let checked: Awaited<ReturnType<typeof preflightExperiment>>;
  try {
    checked = await preflightExperiment(input, files, docsPath, storeKind, {
      ...(deployed?.foundation !== undefined && { foundationModels: [deployed.foundation] }),
      ...(deployed?.embedding !== undefined && { embeddingModels: [deployed.embedding] }),
    });
  } catch (error) {
    await runtime.close();
    await pool?.close();
    throw error;
  }
  const started = Date.now();
  try {
    const prefix = experimentPrefix(experimentId);
    // The trials this run evaluates at most: the budget, less what a resumed experiment recorded.
    const recorded = (await runtime.objectStore.exists(ledgerKeys(prefix).state))
      ? (await readState(runtime.objectStore, prefix)).trials.filter((t) => t.status !== 'running')
          .length
      : 0;
    const budget = Math.max(0, Math.min(checked.input.maxEvals, checked.combinations) - recorded);
    const progress = new ExperimentProgress(process.stderr, { trials: budget });
    const log = (line: string) => {
      if (!quiet) progress.log(line);
    };
    await putJson(runtime.objectStore, input.benchmarkKey as string, questions);
    log(`ai4rag experiment ${experimentId}: documents ${docs}, ${questions.length} questions`);
    let state = '';
    const onEvent = (e: StatusEvent) => {
      if (quiet || e.step === 'evaluation' || e.step === 'generation') return;
      const tag = e.level === 'info' ? '' : `${e.level.toUpperCase()} `;
      const line = `${progress.elapsed()}  ${tag}${e.message}`;
      // A trial answered from the cache, or one that failed (reported when its round is recorded), is done too.
      if (/same indexing and RAG parameters as an earlier evaluation/.test(e.message)) {
        progress.trialDone(/^(\S+):/.exec(e.message)?.[1], line);
      } else if (state === 'Record' && e.level === 'warning') progress.trialDone(undefined, line);
      else progress.log(line);
    };
    const onPattern = (payload: PatternPayload) => {
      if (quiet) return;
      const metric = payload.evaluation.metrics.find((m) => m.optimization_metric);
      progress.trialDone(
        payload.name,
        `${progress.elapsed()}  ✓ ${payload.name.padEnd(10)} ${metric?.name ?? 'score'} ${metric?.scores.mean ?? 'n/a'}  (${describeConfig(payload)})`,
      );
    };
    const onQuestion = (q: { pattern: string; done: number; total: number }) => {
      if (!quiet) progress.question(q.pattern, q.done, q.total);
    };
    const result = await runLocalExperiment({
      runtime,
      input,
      listeners: { onEvent, onPattern, onQuestion },
      context: { trialConcurrency },
      onState: (name, type) => {
        state = name;
        if (type !== 'Task' || name === 'Prepare' || name === 'Finalize')
          log(`${progress.elapsed()}  » ${name}`);
      },
    })
      .catch((error: unknown) => {
        throw prepareValidationError(error, input.benchmarkKey as string, files) ?? error;
      })
      .finally(() => progress.end());
    const artefacts = (result.output as { artefacts?: ExperimentArtefacts }).artefacts;
    if (artefacts === undefined)
      throw new ValidationError('the state machine returned no artefacts');
    const keys = ledgerKeys(prefix);
    const leaderboard = await getJson<LeaderboardEntry[]>(runtime.objectStore, keys.leaderboard);
    const usage = (await getJson<ReportData>(runtime.objectStore, keys.reportData)).usage;
    const folder = join(dataDir, 'artifacts', ...prefix.split('/').filter(Boolean));
    let outDir = folder;
    const out = str(p, 'out');
    if (out !== undefined) {
      outDir = resolve(out);
      await mkdir(outDir, { recursive: true });
      for (const name of ARTEFACTS) await copyFile(join(folder, name), join(outDir, name));
    }
    if (recordTable !== undefined) {
      const state = await readState(runtime.objectStore, prefix);
      const rows = state.trials.map((t) => ({ config: t.config, score: t.score }));
      await writeFile(
        resolve(recordTable),
        `${JSON.stringify(
          {
            description: `Score table: every valid configuration of the search space, scored by ${state.input.optimizationMetric}.`,
            documents: state.corpus.documents,
            questions: state.benchmark.questions,
            metric: state.input.optimizationMetric,
            rows,
          },
          null,
          1,
        )}\n`,
      );
      log(`Score table of ${rows.length} configurations written to ${recordTable}`);
    }
    const steps = result.states.map((s) => `${s.name} ×${s.count}`).join(', ');
    if (p.values.json === true) {
      io.out(
        jsonLine({
          experimentId,
          artefacts: ARTEFACTS.map((n) => join(outDir, n)),
          best: artefacts.best,
          trials: artefacts.trials,
          failed: artefacts.failed,
          states: result.states,
          ...(usage !== undefined && { usage }),
        }),
      );
      return 0;
    }
    io.out('');
    io.out(`State machine steps run: ${steps}`);
    io.out(
      `Trials: ${artefacts.trials} (${artefacts.failed} failed) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    if (usage !== undefined) for (const line of usageLines(usage)) io.out(line);
    io.out('');
    io.out('Leaderboard (top 5):');
    for (const e of leaderboard.slice(0, 5)) {
      io.out(
        `  ${String(e.rank).padStart(2)}. ${e.pattern_name.padEnd(10)} ${e.score.toFixed(4)}  ${describeConfig(e.pattern)}`,
      );
    }
    io.out('');
    io.out(`Artefacts in ${outDir}: ${ARTEFACTS.join(', ')}`);
    io.out(`Report: ${pathToFileURL(join(outDir, 'report.html')).href}`);
    return 0;
  } finally {
    await runtime.close();
    await pool?.close();
  }
}

/**
 * `ai4rag optimizer-sim --scores FILE --optimizer NAME[,NAME] --max-evals N --seeds K`: replays optimizers over a
 * recorded score table and reports, per optimizer, the median number of evaluations to reach the best configuration
 * and the mean best score after N evaluations.
 * @throws {ValidationError} for missing flags or a bad table.
 */
export async function cmdOptimizerSim(p: Parsed, io: Io): Promise<number> {
  const file = str(p, 'scores');
  if (file === undefined) throw new ValidationError('--scores FILE is required (a score table)');
  const names = (list(str(p, 'optimizer')) ?? [...OPTIMIZER_NAMES]).flatMap((n) =>
    n === 'all' ? [...OPTIMIZER_NAMES] : [n],
  );
  for (const n of names) {
    if (!(OPTIMIZER_NAMES as readonly string[]).includes(n)) {
      throw new ValidationError(`--optimizer: unknown '${n}' (use ${OPTIMIZER_NAMES.join(', ')})`);
    }
  }
  const table = parseScoreTable(await readJsonFile(file, 'score table'));
  const positive = (name: string, fallback: number): number => {
    const n = optInt(p, name) ?? fallback;
    if (n < 1) throw new ValidationError(`--${name} must be an integer ≥ 1, got ${n}`);
    return n;
  };
  const maxEvals = positive('max-evals', table.length);
  const seeds = positive('seeds', 50);
  const batchSize = positive('batch-size', 1);
  const results = names.map((name) =>
    simulateOptimizer(table, name as OptimizerName, { maxEvals, seeds, batchSize }),
  );
  if (p.values.json === true) {
    io.out(jsonLine({ scores: file, rows: table.length, maxEvals, seeds, batchSize, results }));
    return 0;
  }
  io.out(
    `${table.length} configurations, ${seeds} seeds, ${maxEvals} evaluations each, ${batchSize} proposal(s) per round`,
  );
  io.out('optimizer  median evals to best  reached  mean best after N');
  for (const r of results) {
    io.out(
      `${r.optimizer.padEnd(10)} ${String(r.medianEvalsToBest ?? 'n/a').padStart(20)}  ${`${r.reachedBest}/${r.seeds}`.padStart(7)}  ${r.meanBestAfterN.toFixed(4).padStart(18)}`,
    );
  }
  return 0;
}
