import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  screenedSearch,
  toGenerateResponse,
  toQueryTransform,
  toSearchHit,
} from '../../functions/_shared/query.js';
import {
  CHUNKING_METHODS,
  createChunker,
  METHOD_LIMITS,
  SEMANTIC_BREAKPOINTS,
  validateChunkingOptions,
} from '../../shared/src/chunking/index.js';
import type {
  ChunkingMethod,
  ChunkingOptions,
  SemanticBreakpoint,
} from '../../shared/src/chunking/types.js';
import { DEFAULT_DATA_DIR, ENV } from '../../shared/src/config.js';
import {
  DEFAULT_CHUNKING,
  DEFAULT_COLLECTION,
  defaultRetrievalFor,
  SEMANTIC_RETRIEVAL,
} from '../../shared/src/defaults.js';
import { streamDocuments } from '../../shared/src/documents/index.js';
import { DEFAULT_EMBEDDING_MODEL } from '../../shared/src/embeddings/factory.js';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import { Ai4ragError, NotFoundError, ValidationError } from '../../shared/src/errors.js';
import { loadBenchmark } from '../../shared/src/evaluation/benchmark.js';
import { evaluateRetrieval } from '../../shared/src/evaluation/eval-retrieval.js';
import {
  LOCAL_EXTRACTIVE_MODEL_ID,
  LocalExtractiveModel,
} from '../../shared/src/generation/local-extractive.js';
import { SimpleRAG } from '../../shared/src/generation/rag-template.js';
import { ingestDocuments, MAX_INGEST_WRITERS } from '../../shared/src/ingest/pipeline.js';
import { costOf } from '../../shared/src/pricing.js';
import { rerankOrKeepOrder } from '../../shared/src/retrieval/rerank.js';
import {
  type RetrievalMethod,
  Retriever,
  type RetrieverOptions,
} from '../../shared/src/retrieval/retriever.js';
import { openStore, STORE_KINDS, type StoreKind } from '../../shared/src/runtime/open-store.js';
import { bestSnippet } from '../../shared/src/text/snippet.js';
import { resolveCollectionName } from '../../shared/src/vectorstores/naming.js';
import { buildMemory } from '../../shared/src/vectorstores/pgvector/ann-index.js';
import type {
  IndexBuildResult,
  IntegrityReport,
  RankerStrategy,
  SearchMode,
  VectorStore,
} from '../../shared/src/vectorstores/types.js';
import {
  ensureDataDir,
  filterFlag,
  flag,
  GLOBAL_OPTIONS,
  int,
  type OptionSpec,
  oneOf,
  optInt,
  optNum,
  type Parsed,
  parse,
  str,
} from './args.js';
import { ASK_OPTIONS, createFoundationModel, renderAnswer } from './ask.js';
import { cmdCollections, confirmed } from './collections.js';
import { withConfigFile } from './config-file.js';
import { COMMAND_HELP, commandHelp, globalHelp } from './help.js';
import { jsonLine } from './json.js';
import { cliEmbedder } from './models.js';
import {
  CHAT_OPTIONS,
  EXPERIMENT_OPTIONS,
  OPTIMIZER_SIM_OPTIONS,
  SCORE_OPTIONS,
  SERVE_OPTIONS,
} from './option-specs.js';
import { cliPrices } from './prices.js';
import { ProgressLine } from './progress.js';
import { QUERY_TRANSFORM_OPTIONS, queryTransformFrom } from './query-transform.js';
import { RERANK_OPTIONS, rerankFrom } from './rerank.js';

const COLLECTION_OPTIONS: OptionSpec = {
  collection: { type: 'string' },
  embedding: { type: 'string' },
  'embedding-prefixes': { type: 'string' },
};
const CHUNKING_OPTIONS: OptionSpec = {
  chunking: { type: 'string' },
  'chunk-size': { type: 'string' },
  'chunk-overlap': { type: 'string' },
  'parent-chunk-size': { type: 'string' },
  breakpoint: { type: 'string' },
  'breakpoint-amount': { type: 'string' },
  'buffer-size': { type: 'string' },
  'min-chunk-size': { type: 'string' },
};
const RETRIEVAL: OptionSpec = {
  'search-mode': { type: 'string' },
  'ranker-strategy': { type: 'string' },
  'ranker-k': { type: 'string' },
  'ranker-alpha': { type: 'string' },
  'retrieval-method': { type: 'string' },
  'window-size': { type: 'string' },
  filter: { type: 'string' },
};

/** The options each command parses besides the global ones (which {@link COMMAND_HELP} says it takes). */
export const COMMAND_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  ingest: {
    ...COLLECTION_OPTIONS,
    ...CHUNKING_OPTIONS,
    prune: { type: 'boolean' },
    writers: { type: 'string' },
    'no-index': { type: 'boolean' },
  },
  search: {
    ...COLLECTION_OPTIONS,
    ...RETRIEVAL,
    ...QUERY_TRANSFORM_OPTIONS,
    ...RERANK_OPTIONS,
    k: { type: 'string' },
    injection: { type: 'string' },
  },
  ask: {
    ...COLLECTION_OPTIONS,
    ...RETRIEVAL,
    ...QUERY_TRANSFORM_OPTIONS,
    ...ASK_OPTIONS,
    pattern: { type: 'string' },
  },
  chat: CHAT_OPTIONS,
  'eval-retrieval': {
    ...COLLECTION_OPTIONS,
    ...CHUNKING_OPTIONS,
    ...RETRIEVAL,
    ...QUERY_TRANSFORM_OPTIONS,
    corpus: { type: 'string' },
    benchmark: { type: 'string' },
    depth: { type: 'string' },
  },
  documents: { ...COLLECTION_OPTIONS, yes: { type: 'boolean' } },
  collections: { yes: { type: 'boolean' } },
  stats: COLLECTION_OPTIONS,
  index: {
    ...COLLECTION_OPTIONS,
    force: { type: 'boolean' },
    merge: { type: 'boolean' },
    memory: { type: 'string' },
  },
  check: { ...COLLECTION_OPTIONS, repair: { type: 'boolean' } },
  score: SCORE_OPTIONS,
  experiment: EXPERIMENT_OPTIONS,
  'optimizer-sim': OPTIMIZER_SIM_OPTIONS,
  serve: SERVE_OPTIONS,
  demo: {},
};

/** Every option some command takes: what a config file may name. */
const KNOWN_OPTIONS = new Set([
  ...Object.keys(GLOBAL_OPTIONS),
  ...Object.values(COMMAND_OPTIONS).flatMap((o) => Object.keys(o)),
]);

/** The options a command parses: its own and the global ones it takes. */
function commandSpec(command: string): OptionSpec {
  const globals = COMMAND_HELP[command]?.globals ?? [];
  const taken = Object.fromEntries(
    Object.entries(GLOBAL_OPTIONS).filter(
      ([name]) => name === 'help' || (globals as readonly string[]).includes(name),
    ),
  );
  return { ...taken, ...COMMAND_OPTIONS[command] };
}

/**
 * Parses a command's arguments: its own options and the global ones it takes; a global option it does not take
 * is refused (exit 2) with the reason, instead of being silently ignored.
 */
function parseCommand(command: string, argv: readonly string[]): Parsed {
  const globals = (COMMAND_HELP[command]?.globals ?? []) as readonly string[];
  for (const name of ['store', 'data-dir', 'json']) {
    if (globals.includes(name)) continue;
    if (argv.some((a) => a === `--${name}` || a.startsWith(`--${name}=`))) {
      throw new ValidationError(
        `--${name} does not apply to ${command}: ${REFUSED[name]?.(command)}`,
      );
    }
  }
  try {
    return parse([...argv], COMMAND_OPTIONS[command] ?? {});
  } catch (error) {
    const message = (error as Error).message;
    const ambiguous = /^Option '(--[^']+)' argument is ambiguous/.exec(message);
    if (ambiguous !== null) {
      throw new ValidationError(
        `${ambiguous[1]} needs a value; a value starting with "-" is written ${ambiguous[1]}=-1`,
        { cause: error },
      );
    }
    const missing = /^Option '(--[^' ]+)[^']*' argument missing/.exec(message);
    if (missing !== null) {
      throw new ValidationError(`${missing[1]} needs a value (ai4rag ${command} --help)`, {
        cause: error,
      });
    }
    const unknown = /^Unknown option '(--?[^']+)'/.exec(message);
    if (unknown === null) throw error;
    throw new ValidationError(
      `unknown option ${unknown[1]} for ${command} (ai4rag ${command} --help lists its options)`,
      { cause: error },
    );
  }
}

const REFUSED: Record<string, (command: string) => string> = {
  store: (c) =>
    c === 'score' || c === 'optimizer-sim'
      ? 'it reads only the given file'
      : 'it uses no vector store',
  'data-dir': (c) =>
    c === 'eval-retrieval'
      ? 'it indexes in memory (pglite) or in a throwaway server collection; name one with --collection and --store'
      : 'it reads only the given file',
  json: (c) =>
    c === 'demo' ? 'it prints a walkthrough; use search --json' : 'it has no JSON output',
};

interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  /** Lines of standard input (chat); process.stdin when absent. */
  input?: NodeJS.ReadableStream;
}

const defaultIo: Io = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/**
 * Runs the CLI. Returns the process exit code: 0 success, 1 failure, 2 usage error.
 */
export async function main(argv: string[], io: Io = defaultIo): Promise<number> {
  const [command, ...given] = argv;
  try {
    if (command === undefined) {
      io.out(globalHelp());
      return 2;
    }
    if (command === '--version' || command === '-V' || command === 'version') {
      io.out(`ai4rag-serverless ${await packageVersion()}`);
      return 0;
    }
    if (command === 'help' || command === '--help' || command === '-h') {
      const topic = given[0];
      if (topic === undefined) {
        io.out(globalHelp());
        return 0;
      }
      if (topic === 'experiments') {
        const { runExperimentsCommand } = await import('./experiments-cmd.js');
        return await runExperimentsCommand(['--help'], io);
      }
      const text = commandHelp(topic);
      if (text === undefined)
        throw new ValidationError(`no command "${topic}"; run "ai4rag --help"`);
      io.out(text);
      return 0;
    }
    if (command !== 'experiments' && (given.includes('--help') || given.includes('-h'))) {
      const text = commandHelp(command);
      if (text === undefined) {
        io.err(`ai4rag: unknown command "${command}". Run "ai4rag --help".`);
        return 2;
      }
      io.out(text);
      return 0;
    }
    if (command !== 'experiments' && COMMAND_OPTIONS[command] === undefined) {
      io.err(`ai4rag: unknown command "${command}". Run "ai4rag --help".`);
      return 2;
    }
    // The config file's options go in front of the given ones, so a flag on the command line wins.
    const rest =
      command === 'experiments'
        ? given
        : withConfigFile(given, commandSpec(command), KNOWN_OPTIONS);
    const p = () => parseCommand(command, rest);
    switch (command) {
      case 'ingest':
        return await cmdIngest(p(), io);
      case 'search':
        return await cmdSearch(p(), io);
      case 'eval-retrieval':
        return await cmdEvalRetrieval(p(), io);
      case 'documents':
        return await cmdDocuments(p(), io);
      case 'collections':
        return await cmdCollections(p(), io);
      case 'stats':
        return await cmdStats(p(), io);
      case 'check':
        return await cmdCheck(p(), io);
      case 'index':
        return await cmdIndex(p(), io);
      case 'ask':
        return await cmdAsk(p(), io);
      case 'chat':
        return await (await import('./chat.js')).cmdChat(p(), io);
      case 'score':
        return await (await import('./score.js')).cmdScore(p(), io);
      case 'experiment':
        return await (await import('./experiment.js')).cmdExperiment(p(), io);
      case 'optimizer-sim':
        return await (await import('./experiment.js')).cmdOptimizerSim(p(), io);
      case 'experiments':
        return await (await import('./experiments-cmd.js')).runExperimentsCommand(rest, io);
      case 'serve':
        // serve parses its own flags; refused globals are checked first.
        parseCommand(command, rest);
        return await (await import('./serve.js')).runServe(rest);
      default:
        return await cmdDemo(p(), io);
    }
  } catch (error) {
    if (error instanceof ValidationError) {
      io.err(`ai4rag ${command}: ${error.message}`);
      return 2;
    }
    if (error instanceof Ai4ragError) {
      io.err(`ai4rag ${command}: ${error.message}`);
      return 1;
    }
    io.err(`ai4rag ${command}: unexpected error: ${(error as Error).stack ?? String(error)}`);
    return 1;
  }
}

/** The version in the package.json beside `bin/` (the one `npm ci` installed). */
async function packageVersion(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const path = new URL('../../package.json', import.meta.url);
  return (JSON.parse(await readFile(path, 'utf8')) as { version: string }).version;
}

/** The chunking options' names as the flags that set them, for error messages. */
const CHUNKING_FLAG_NAMES: readonly [RegExp, string][] = [
  [/\bchunkSize\b/g, '--chunk-size'],
  [/\bchunkOverlap\b/g, '--chunk-overlap'],
  [/\bparentChunkSize\b/g, '--parent-chunk-size'],
  [/\bbreakpointAmount\b/g, '--breakpoint-amount'],
  [/\bbreakpoint\b(?!-)/g, '--breakpoint'],
  [/\bbufferSize\b/g, '--buffer-size'],
  [/\bminChunkSize\b/g, '--min-chunk-size'],
  [/^Hybrid chunking/, '--chunking hybrid'],
  [/^Semantic chunking/, '--chunking semantic'],
  [/^Hierarchical chunking/, '--chunking hierarchical'],
];

function chunkingFrom(p: Parsed): ChunkingOptions {
  const method = oneOf<ChunkingMethod>(p, 'chunking', CHUNKING_METHODS, DEFAULT_CHUNKING.method);
  const defaultOverlap =
    method === 'hybrid' || method === 'semantic' ? 0 : DEFAULT_CHUNKING.chunkOverlap;
  const chunkSize = int(p, 'chunk-size', DEFAULT_CHUNKING.chunkSize);
  const options: ChunkingOptions = {
    method,
    chunkSize,
    chunkOverlap: int(p, 'chunk-overlap', defaultOverlap),
  };
  const parentChunkSize = optInt(p, 'parent-chunk-size');
  const breakpoint = str(p, 'breakpoint');
  const breakpointAmount = optNum(p, 'breakpoint-amount');
  const bufferSize = optInt(p, 'buffer-size');
  const minChunkSize = optInt(p, 'min-chunk-size');
  if (breakpoint !== undefined) {
    options.breakpoint = oneOf<SemanticBreakpoint>(
      p,
      'breakpoint',
      SEMANTIC_BREAKPOINTS,
      METHOD_LIMITS.DEFAULT_BREAKPOINT,
    );
  }
  if (breakpointAmount !== undefined) options.breakpointAmount = breakpointAmount;
  if (bufferSize !== undefined) options.bufferSize = bufferSize;
  if (minChunkSize !== undefined) options.minChunkSize = minChunkSize;
  if (parentChunkSize !== undefined) options.parentChunkSize = parentChunkSize;
  else if (method === 'hierarchical') {
    // Default parent: four children's worth.
    options.parentChunkSize = Math.min(METHOD_LIMITS.MAX_PARENT_CHUNK_SIZE, 4 * chunkSize);
  }
  // Checked here, before any store opens, and named as the flags.
  try {
    validateChunkingOptions(options);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    let message = error.message;
    for (const [pattern, flagName] of CHUNKING_FLAG_NAMES)
      message = message.replace(pattern, flagName);
    throw new ValidationError(message, { cause: error });
  }
  return options;
}

/** Neighbours on each side a window may take (the retriever's bound). */
const MAX_WINDOW_SIZE = 4;

/**
 * The retrieval flags as retriever options, every value and combination checked here so a problem names the flag
 * the user typed (`--window-size`, not the retriever's `windowSize`) and is reported before any store opens.
 * @param kFlag the flag that set `numberOfChunks` (`--k`, or `--depth` for eval-retrieval)
 * @throws {ValidationError} naming the flag.
 */
function retrievalFrom(p: Parsed, numberOfChunks: number, kFlag = 'k'): RetrieverOptions {
  if (!Number.isInteger(numberOfChunks) || numberOfChunks < 1) {
    throw new ValidationError(`--${kFlag} must be a positive integer, got ${numberOfChunks}`);
  }
  const defaults = defaultRetrievalFor(str(p, 'embedding') ?? DEFAULT_EMBEDDING_MODEL);
  const searchMode = oneOf<SearchMode>(p, 'search-mode', ['vector', 'hybrid'], defaults.searchMode);
  const method = oneOf<RetrievalMethod>(p, 'retrieval-method', ['simple', 'window'], 'simple');
  const windowSize = int(p, 'window-size', method === 'window' ? 1 : 0);
  if (windowSize < 0 || windowSize > MAX_WINDOW_SIZE) {
    throw new ValidationError(
      `--window-size must be an integer in 0..${MAX_WINDOW_SIZE}, got ${windowSize}`,
    );
  }
  if (method === 'window' && windowSize === 0) {
    throw new ValidationError(
      '--retrieval-method window needs --window-size 1..4 (0 means simple)',
    );
  }
  if (method === 'simple' && windowSize > 0) {
    throw new ValidationError(
      `--window-size ${windowSize} needs --retrieval-method window (simple takes no neighbours)`,
    );
  }
  const filter = filterFlag(p, 'filter');
  const base = { numberOfChunks, method, windowSize, ...(filter !== undefined && { filter }) };
  if (searchMode === 'vector') {
    for (const name of ['ranker-strategy', 'ranker-k', 'ranker-alpha']) {
      if (str(p, name) !== undefined)
        throw new ValidationError(`--${name} applies only to --search-mode hybrid`);
    }
    return { ...base, searchMode };
  }
  const rankerStrategy = oneOf<RankerStrategy>(
    p,
    'ranker-strategy',
    ['rrf', 'weighted', 'normalized'],
    defaults.rankerStrategy,
  );
  const implied =
    str(p, 'ranker-strategy') === undefined ? ' (the default with this embedding model)' : '';
  const givenK = optInt(p, 'ranker-k');
  if (givenK !== undefined) {
    if (rankerStrategy !== 'rrf') {
      throw new ValidationError(
        `--ranker-k applies only to --ranker-strategy rrf; the strategy is ${rankerStrategy}${implied}`,
      );
    }
    if (givenK < 1 || givenK > 100) {
      throw new ValidationError(`--ranker-k must be an integer in 1..100, got ${givenK}`);
    }
  }
  const givenAlpha = optNum(p, 'ranker-alpha');
  if (givenAlpha !== undefined) {
    if (rankerStrategy !== 'weighted') {
      throw new ValidationError(
        `--ranker-alpha applies only to --ranker-strategy weighted; the strategy is ${rankerStrategy}${implied}`,
      );
    }
    if (givenAlpha < 0 || givenAlpha >= 1) {
      throw new ValidationError(`--ranker-alpha must be in [0, 1), got ${givenAlpha}`);
    }
  }
  const rankerK = givenK ?? (rankerStrategy === 'rrf' ? SEMANTIC_RETRIEVAL.rankerK : 0);
  const defaultAlpha = defaults.rankerStrategy === 'weighted' ? defaults.rankerAlpha : 0.5;
  const rankerAlpha = givenAlpha ?? (rankerStrategy === 'weighted' ? defaultAlpha : 1);
  return { ...base, searchMode, rankerStrategy, rankerK, rankerAlpha };
}

interface Session {
  store: VectorStore;
  embedder: Embedder;
}

interface SessionOptions {
  inMemory?: boolean;
  collection?: string;
  /** Readers pass false: a missing collection is reported, not created. */
  createIfMissing?: boolean;
}

/**
 * The `--collection` flag (or the command's own collection), refused before anything opens when ai4rag's
 * sanitizing would make it collide with another name or cut it.
 * @throws {ValidationError} naming the flag and showing the sanitized name.
 */
function collectionFrom(p: Parsed, fallback = DEFAULT_COLLECTION): string {
  const name = str(p, 'collection') ?? fallback;
  try {
    resolveCollectionName(name);
  } catch (error) {
    throw new ValidationError(`--collection: ${(error as Error).message}`, { cause: error });
  }
  return name;
}

async function openSession(p: Parsed, options: SessionOptions = {}): Promise<Session> {
  const kind = oneOf<StoreKind>(p, 'store', STORE_KINDS, 'pglite');
  const collectionName = options.collection ?? collectionFrom(p);
  const embedder = await cliEmbedder(
    str(p, 'embedding') ?? DEFAULT_EMBEDDING_MODEL,
    str(p, 'embedding-prefixes'),
  );
  let dataDir: string | undefined;
  if (kind === 'pglite' && !options.inMemory) {
    dataDir = await ensureDataDir(str(p, 'data-dir') ?? DEFAULT_DATA_DIR);
  }
  const store = await openStore({
    kind,
    embedder,
    collectionName,
    dataDir,
    env: ENV,
    logger: storeLog,
    ...(options.createIfMissing === false && { createIfMissing: false }),
  });
  return { store, embedder };
}

/** The progress line being drawn on stderr, if any: a store's messages are written through it. */
let activeProgress: ProgressLine | undefined;

/** A store's message (an index build's, a migration's) on stderr, above the progress line when one is drawn. */
function storeLog(message: string): void {
  if (activeProgress !== undefined) activeProgress.log(message);
  else process.stderr.write(`${message}\n`);
}

/** Runs `fn` while `progress` is the line a store's messages are written above. */
async function withProgress<T>(progress: ProgressLine, fn: () => Promise<T>): Promise<T> {
  activeProgress = progress;
  try {
    return await fn();
  } finally {
    activeProgress = undefined;
    progress.done();
  }
}

async function withSession<T>(
  p: Parsed,
  fn: (s: Session) => Promise<T>,
  options?: SessionOptions,
): Promise<T> {
  const session = await openSession(p, options);
  try {
    return await fn(session);
  } finally {
    await session.store.close();
  }
}

async function ingestPaths(
  session: Session,
  paths: string[],
  chunking: ChunkingOptions,
  opts: { prune: boolean; json: boolean; writers?: number; buildIndex?: boolean },
  io: Io,
) {
  const started = performance.now();
  const chunker = createChunker(chunking, { embedder: session.embedder });
  const absolute = paths.map((x) => resolve(x));
  if (opts.prune) {
    for (const path of absolute) {
      if (!(await stat(path).catch(() => undefined))?.isDirectory()) {
        throw new ValidationError(
          `--prune needs folders (document keys are relative to them); ${path} is not one`,
        );
      }
    }
  }
  // Taken before reading: a deletion committed after this instant (another process's --prune) wins.
  const readAt = new Date().toISOString();
  // A stream: .jsonl corpora are read line by line, so no corpus is too large to ingest (each record keeps its bound).
  const loaded = await streamDocuments(absolute);
  const progress = new ProgressLine(process.stderr, !opts.json);
  const summary = await withProgress(progress, () =>
    ingestDocuments(loaded.documents, {
      store: session.store,
      chunking,
      chunk: (doc) => chunker.chunk(doc),
      prune: opts.prune,
      ...(opts.writers !== undefined && { writers: opts.writers }),
      ...(opts.buildIndex === false && { buildIndex: false }),
      readAt,
      // A file (or folder) that failed to load this time is still on disk: keep its previous version(s). Read at the
      // end, when the stream has found every failure.
      keep: () => loaded.failures.map((f) => f.key),
      onProgress: (pr) =>
        progress.update(
          pr.documentsDone,
          pr.documentsTotal,
          `documents, ${pr.chunksStored} chunks embedded`,
        ),
    }),
  );
  // Files that are not documents (unsupported type, empty) are skipped; every other load failure is a failed
  // document and makes the exit status non-zero.
  const skippedFiles = loaded.failures.filter(
    (f) => f.reason === 'unsupported_type' || f.reason === 'empty',
  );
  const loadFailures = loaded.failures.filter((f) => !skippedFiles.includes(f));
  for (const f of skippedFiles) io.err(`skipped ${f.key}: ${f.message}`);
  for (const f of loadFailures) io.err(`failed ${f.key}: ${f.message}`);
  for (const w of loaded.warnings) io.err(`warning: ${w.message}`);
  for (const d of summary.documents) {
    if (d.status === 'failed') io.err(`failed ${d.documentId}: ${d.error}`);
    if (d.status === 'superseded') io.err(`not stored ${d.documentId}: ${d.error}`);
  }
  for (const k of summary.kept) io.err(`kept ${k.documentId}: ${k.reason}`);
  if (summary.index) {
    io.err(describeBuild(summary.index));
  }
  if (summary.indexError) {
    io.err(`warning: index not built (${summary.indexError}); run "ai4rag index" later`);
  }
  if (summary.statisticsError) {
    io.err(
      `warning: keyword statistics not refreshed (${summary.statisticsError}); the next keyword search refreshes them`,
    );
  }
  const count = (status: string) => summary.documents.filter((d) => d.status === status).length;
  return {
    collection: session.store.collectionName,
    documents: summary.documentsTotal,
    indexed: count('indexed'),
    unchanged: count('unchanged'),
    superseded: count('superseded'),
    failed: count('failed') + loadFailures.length,
    skipped: skippedFiles.length,
    chunksEmbedded: summary.chunksStored,
    pruned: summary.pruned,
    kept: summary.kept,
    ...(summary.index && { index: summary.index }),
    // What semantic chunking cost: sentence groups embedded (each once), cache hits, tokens, milliseconds.
    ...(chunking.method === 'semantic' && { chunkingCost: chunker.cost() }),
    failures: [
      ...loadFailures.map((f) => ({ documentId: f.key, reason: f.reason, message: f.message })),
      ...summary.documents
        .filter((d) => d.status === 'failed')
        .map((d) => ({ documentId: d.documentId, reason: 'ingest_error', message: d.error ?? '' })),
    ],
    seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
  };
}

/**
 * `--writers`: staged writes in flight at once. Default 2 on a PostgreSQL server (an indexed collection's HNSW
 * insertions then use two server cores), 1 elsewhere (PGlite has one connection; Milvus writes one at a time).
 * @throws {ValidationError} for a value outside 1–8, or above 1 on Milvus.
 */
function writersFrom(p: Parsed): number {
  const store = str(p, 'store') ?? 'pglite';
  const given = optInt(p, 'writers');
  if (given === undefined) return store === 'pgvector' ? 2 : 1;
  if (given < 1 || given > MAX_INGEST_WRITERS) {
    throw new ValidationError(
      `--writers must be an integer from 1 to ${MAX_INGEST_WRITERS}, got "${str(p, 'writers')}"`,
    );
  }
  if (given > 1 && store === 'milvus') {
    throw new ValidationError(
      `--writers ${given} needs --store pgvector or pglite; Milvus writes one at a time`,
    );
  }
  return given;
}

async function cmdIngest(p: Parsed, io: Io): Promise<number> {
  if (p.positionals.length === 0)
    throw new ValidationError('give at least one file or folder to ingest');
  const chunking = chunkingFrom(p);
  const writers = writersFrom(p);
  return withSession(p, async (session) => {
    const r = await ingestPaths(
      session,
      p.positionals,
      chunking,
      {
        prune: flag(p, 'prune'),
        json: flag(p, 'json'),
        writers,
        buildIndex: !flag(p, 'no-index'),
      },
      io,
    );
    if (flag(p, 'json')) io.out(jsonLine(r));
    else {
      io.out(
        `${r.collection}: ${r.indexed} indexed, ${r.unchanged} unchanged, ${r.failed} failed` +
          (r.superseded > 0
            ? `, ${r.superseded} deleted or replaced by another writer meanwhile`
            : '') +
          (r.skipped > 0 ? `, ${r.skipped} files skipped` : '') +
          `; ${r.chunksEmbedded} chunks embedded in ${r.seconds}s` +
          (r.chunkingCost
            ? `; semantic chunking embedded ${r.chunkingCost.embedded} sentence groups (${r.chunkingCost.cacheHits} cached, ${r.chunkingCost.tokens} tokens) in ${(r.chunkingCost.ms / 1000).toFixed(2)}s`
            : '') +
          (r.pruned.length > 0 ? `; pruned ${r.pruned.length}` : '') +
          (r.kept.length > 0 ? `; kept ${r.kept.length} unreadable` : ''),
      );
    }
    // Every other document is committed first; any failed document makes the run fail.
    return r.failed > 0 ? 1 : 0;
  });
}

function renderHits(
  hits: Awaited<ReturnType<Retriever['retrieve']>>,
  query: string,
  io: Io,
  flagged: ReadonlyMap<string, readonly string[]> = new Map(),
): void {
  hits.forEach((h, i) => {
    const where = `${h.metadata.document_id} #${h.metadata.sequence_number}`;
    const heading = typeof h.metadata.headings === 'string' ? ` (${h.metadata.headings})` : '';
    const rules = flagged.get(h.id);
    const mark = rules ? `  [possible prompt injection: ${rules.join(', ')}]` : '';
    io.out(`${i + 1}. ${where}${heading}  score ${h.score?.toFixed(4) ?? '-'}${mark}`);
    io.out(`   ${bestSnippet(h.text, query)}`);
  });
}

async function cmdSearch(p: Parsed, io: Io): Promise<number> {
  const query = p.positionals.join(' ').trim();
  if (query === '')
    throw new ValidationError('give a query, e.g. ai4rag search "how many leave days"');
  const options = retrievalFrom(p, int(p, 'k', 5));
  const rerank = rerankFrom(p, options.numberOfChunks);
  const transform = queryTransformFrom(p, options, () => createFoundationModel(str(p, 'model')));
  const injection = oneOf(p, 'injection', ['exclude', 'quote', 'off'] as const, 'exclude');
  return withSession(
    p,
    async (session) => {
      // Screened for prompt injection as POST /search is (default exclude, more fetched to fill k).
      const screened = await screenedSearch(
        session.store,
        query,
        { ...options, ...(transform && { queryTransform: transform }) },
        rerank ? rerank.candidates : options.numberOfChunks,
        injection,
      );
      const { hits: candidates, queryTransform, flaggedRules } = screened;
      const { chunks: hits, warning: rerankWarning } = rerank
        ? await rerankOrKeepOrder(rerank.reranker, query, candidates, options.numberOfChunks)
        : { chunks: candidates, warning: undefined };
      const warnings = [screened.warning, rerankWarning].filter((w) => w !== undefined);
      for (const w of warnings) io.err(`warning: ${w}`);
      if (flag(p, 'json')) {
        io.out(
          // The API's POST /search answer, field for field.
          JSON.stringify({
            query,
            collection: session.store.collectionName,
            results: hits.map((hit) => {
              const rules = flaggedRules.get(hit.id);
              return { ...toSearchHit(hit), ...(rules && { flagged_rules: rules }) };
            }),
            ...(warnings.length > 0 && { warnings }),
            ...(queryTransform && { query_transform: toQueryTransform(queryTransform) }),
          }),
        );
      } else if (hits.length === 0) {
        io.out(
          `no results in ${session.store.collectionName} (is it empty? run "ai4rag ingest <path>" first)`,
        );
      } else {
        renderHits(hits, query, io, flaggedRules);
      }
      return 0;
    },
    READER,
  );
}

async function cmdAsk(p: Parsed, io: Io): Promise<number> {
  const question = p.positionals.join(' ').trim();
  if (question === '')
    throw new ValidationError('give a question, e.g. ai4rag ask "how many leave days"');
  // A pattern is answered as `serve --pattern` answers it: through the generate handler.
  if (str(p, 'pattern') !== undefined)
    return (await import('./chat.js')).cmdAskPattern(p, question, io);
  const options = retrievalFrom(p, int(p, 'k', 5));
  const rerank = rerankFrom(p, options.numberOfChunks);
  const prices = await cliPrices(p);
  const base = createFoundationModel(str(p, 'model'));
  const transform = queryTransformFrom(p, options, () => base);
  return withSession(
    p,
    async (session) => {
      // The local model weighs question terms by the collection's BM25 statistics (when the store keeps them).
      const termStats =
        base.modelId === LOCAL_EXTRACTIVE_MODEL_ID ? await session.store.termStats?.() : undefined;
      const model = termStats ? new LocalExtractiveModel({ termStats }) : base;
      const rag = new SimpleRAG({
        retriever: new Retriever(session.store, {
          ...options,
          ...(rerank && { numberOfChunks: rerank.candidates }),
          ...(transform && { queryTransform: transform }),
        }),
        model,
        ...(rerank && {
          reranker: { ...rerank, k: options.numberOfChunks, fallback: true },
        }),
      });
      const answer = await rag.generate(question);
      for (const w of answer.warnings ?? []) io.err(`warning: ${w}`);
      // Local models cost 0 with or without a table; others only when the table prices them.
      const costUsd = answer.usage && costOf(answer.usage, model.modelId, prices ?? {});
      if (flag(p, 'json')) {
        io.out(
          // The API's POST /generate answer, field for field.
          JSON.stringify(toGenerateResponse(answer, model.modelId, prices ?? {})),
        );
      } else for (const line of renderAnswer(answer, costUsd)) io.out(line);
      return 0;
    },
    READER,
  );
}

async function cmdEvalRetrieval(p: Parsed, io: Io): Promise<number> {
  const corpus = str(p, 'corpus');
  const benchmarkPath = str(p, 'benchmark');
  if (!corpus || !benchmarkPath) throw new ValidationError('--corpus and --benchmark are required');
  const corpusPath: string = corpus;
  const questions = await loadBenchmark(benchmarkPath);
  const chunking = chunkingFrom(p);
  const options = retrievalFrom(p, int(p, 'depth', 100), 'depth');
  const transform = queryTransformFrom(p, options, () => createFoundationModel(str(p, 'model')));
  const json = flag(p, 'json');
  // A throwaway collection unless one is named: in memory for pglite, dropped afterwards on a server.
  const named = str(p, 'collection') === undefined ? undefined : collectionFrom(p);
  const serverStore = str(p, 'store') === 'pgvector' || str(p, 'store') === 'milvus';
  const collection = named ?? `ai4rag_eval_${Date.now().toString(36)}`;
  return withSession(
    p,
    async (session) => {
      try {
        return await evalIn(session);
      } finally {
        if (named === undefined && serverStore) await session.store.drop();
      }
    },
    { inMemory: !serverStore, collection },
  );

  async function evalIn(session: Session): Promise<number> {
    const ingest = await ingestPaths(session, [corpusPath], chunking, { prune: false, json }, io);
    const keys = (await session.store.listDocuments()).map((d) => d.documentId);
    const progress = new ProgressLine(process.stderr, !json);
    const evaluation = await withProgress(progress, () =>
      evaluateRetrieval(
        new Retriever(session.store, {
          ...options,
          ...(transform && { queryTransform: transform }),
        }),
        questions,
        keys,
        (d, t) => progress.update(d, t, 'questions'),
      ),
    );
    const result = {
      questions: evaluation.questions,
      'recall@1': round(evaluation.metrics['recall@1']),
      'recall@5': round(evaluation.metrics['recall@5']),
      'recall@10': round(evaluation.metrics['recall@10']),
      'mrr@10': round(evaluation.metrics['mrr@10']),
      'ndcg@10': round(evaluation.metrics['ndcg@10']),
    };
    if (!json) {
      io.out(
        `indexed ${ingest.indexed} documents (${ingest.chunksEmbedded} chunks) with ${chunking.method} ` +
          `${chunking.chunkSize}/${chunking.chunkOverlap}${chunking.parentChunkSize === undefined ? '' : ` (parents ${chunking.parentChunkSize})`}, ${session.embedder.modelId}; ` +
          `retrieval ${options.searchMode}${options.rankerStrategy ? `/${options.rankerStrategy}` : ''}` +
          (evaluation.skipped > 0
            ? `; ${evaluation.skipped} questions without gold documents skipped`
            : ''),
      );
    }
    io.out(JSON.stringify(result));
    return 0;
  }
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

const READER: SessionOptions = { createIfMissing: false };

/**
 * `ai4rag documents [list]` lists the collection's documents; `ai4rag documents delete <key> [--yes]` removes one
 * (its chunks and record).
 * @throws {ValidationError} for an unknown subcommand, or delete without a key or confirmation.
 */
async function cmdDocuments(p: Parsed, io: Io): Promise<number> {
  const [sub = 'list', ...keys] = p.positionals;
  if (sub !== 'list' && sub !== 'delete') {
    throw new ValidationError(
      `give list or delete <key>, e.g. ai4rag documents delete faq.md (got "${sub}")`,
    );
  }
  if (sub === 'list' && keys.length > 0) {
    throw new ValidationError(`documents list takes no keys (got "${keys.join(' ')}")`);
  }
  if (sub === 'delete' && keys.length !== 1) {
    throw new ValidationError(
      'give one document key to delete, e.g. ai4rag documents delete faq.md',
    );
  }
  if (sub === 'list' && flag(p, 'yes'))
    throw new ValidationError('--yes applies to documents delete');
  return withSession(
    p,
    async ({ store }) => {
      if (sub === 'delete') {
        const key = keys[0] as string;
        const doc = await store.getDocument(key);
        if (doc === undefined) {
          const known = (await store.listDocuments()).map((d) => d.documentId);
          const near = known.filter((k) => k.endsWith(`/${key}`) || k.split('/').pop() === key);
          throw new NotFoundError(
            `no document "${key}" in ${store.collectionName}${near.length > 0 ? ` (did you mean ${near.map((k) => `"${k}"`).join(', ')}?)` : ''}`,
          );
        }
        if (
          !(await confirmed(
            p,
            io,
            `Delete ${key} (${doc.chunkCount} chunks) from ${store.collectionName}?`,
          ))
        ) {
          io.err('not deleted');
          return 1;
        }
        const chunks = await store.deleteDocument(key);
        if (flag(p, 'json')) {
          io.out(jsonLine({ collection: store.collectionName, deleted: key, chunks }));
        } else io.out(`deleted ${key} from ${store.collectionName} (${chunks} chunks)`);
        return 0;
      }
      const docs = await store.listDocuments();
      if (flag(p, 'json')) io.out(jsonLine(docs.map(({ version: _v, sequencer: _s, ...d }) => d)));
      else
        for (const d of docs)
          io.out(
            `${d.documentId}\t${d.chunkCount} chunks\t${d.updatedAt}\t${d.contentHash.slice(0, 12)}`,
          );
      return 0;
    },
    READER,
  );
}

async function cmdStats(p: Parsed, io: Io): Promise<number> {
  return withSession(
    p,
    async ({ store }) => {
      const stats = await store.stats();
      io.out(
        flag(p, 'json')
          ? jsonLine(stats)
          : Object.entries(stats)
              .map(([k, v]) => `${k}: ${v}`)
              .join('\n'),
      );
      return 0;
    },
    READER,
  );
}

function describeIntegrity(r: IntegrityReport): string[] {
  const lines = [
    `${r.collection}: ${r.documents} documents, ${r.chunks} chunks — ${r.clean ? 'clean' : 'problems found'}`,
  ];
  if (r.orphanChunks > 0) {
    lines.push(
      `  ${r.orphanChunks} orphaned chunks (of no committed document version; never searched)`,
    );
  }
  for (const m of r.mismatched) {
    lines.push(`  ${m.documentId}: record says ${m.recorded} chunks, ${m.stored} stored`);
  }
  for (const w of r.expiredWrites) {
    lines.push(`  abandoned write ${w.version} by ${w.owner}: ${w.chunks} staged chunks`);
  }
  for (const w of r.liveWrites) {
    lines.push(
      `  write in progress ${w.version} by ${w.owner}: ${w.chunks} staged chunks (lease until ${w.expiresAt})`,
    );
  }
  if (r.repaired) {
    lines.push(
      `  repaired: ${r.repaired.chunksDeleted} chunks deleted, ${r.repaired.writesSwept} writes swept, ` +
        `${r.repaired.recordsFixed} documents marked for re-indexing`,
    );
  }
  return lines;
}

async function cmdIndex(p: Parsed, io: Io): Promise<number> {
  const memory = str(p, 'memory');
  if (memory !== undefined) {
    try {
      buildMemory(memory);
    } catch (error) {
      throw new ValidationError(`--memory: ${(error as Error).message}`, { cause: error });
    }
  }
  return withSession(
    p,
    async ({ store }) => {
      // The keyword statistics first: a re-weighting a commit left to later (a collection past its bound) is done
      // here rather than by a search, and before the build, whose HNSW graph would otherwise take every updated row.
      const statistics = await store.refreshStatistics?.();
      const reweighted = statistics?.reweighted === true;
      if (reweighted && !flag(p, 'json')) {
        io.out(
          `${store.collectionName}: BM25 weights recomputed (the average chunk length had drifted)`,
        );
      }
      if (!store.buildIndex) {
        io.out(`${store.collectionName}: this store indexes at creation; nothing to build`);
        return 0;
      }
      const r = await store.buildIndex({
        force: flag(p, 'force'),
        merge: flag(p, 'merge'),
        pack: true,
        ...(memory !== undefined && { memory }),
      });
      if (flag(p, 'json')) {
        io.out(
          jsonLine({
            collection: store.collectionName,
            ...r,
            ...(reweighted && { bm25Reweighted: true }),
          }),
        );
      } else {
        if (r.postingsSwapped) {
          io.out(
            `${store.collectionName}: keyword index: the fresh postings had outgrown the folded ones and took their place; ${r.postingsFolded ?? 0} formerly folded postings moved`,
          );
        } else if (r.postingsFolded !== undefined) {
          io.out(
            `${store.collectionName}: keyword index: ${r.postingsFolded} fresh postings folded`,
          );
        }
        if (r.postingsPacked !== undefined) {
          io.out(
            `${store.collectionName}: keyword index: ${r.postingsPacked} long postings lists packed`,
          );
        }
        if (r.built) io.out(`${store.collectionName}: ${describeBuild(r)}`);
        else io.out(`${store.collectionName}: no index built — ${r.reason}`);
      }
      return 0;
    },
    READER,
  );
}

/** One line on an index build: how many chunks it indexed, of how many, and the segments it left. */
function describeBuild(r: IndexBuildResult): string {
  const what =
    r.reason === 'converted' ? 'converted to segments' : r.reason === 'merged' ? 'merged' : 'built';
  const segments = r.segments === undefined ? '' : `, ${r.segments} segment(s)`;
  return `HNSW index ${what}: ${r.indexed ?? r.rows} of ${r.rows} chunks indexed in ${r.seconds}s${segments}`;
}

async function cmdCheck(p: Parsed, io: Io): Promise<number> {
  return withSession(
    p,
    async ({ store }) => {
      const found = await store.checkIntegrity({ repair: flag(p, 'repair') });
      const after = found.repaired ? await store.checkIntegrity() : found;
      if (flag(p, 'json')) io.out(jsonLine({ ...found, after }));
      else {
        for (const line of describeIntegrity(found)) io.out(line);
        if (found.repaired) io.out(`after repair: ${after.clean ? 'clean' : 'problems remain'}`);
      }
      return after.clean ? 0 : 1;
    },
    READER,
  );
}

const DEMO_QUERIES = [
  'How many days of annual leave do employees get?',
  'What is the approval limit for expenses?',
  'password rules for IT accounts',
];

async function cmdDemo(p: Parsed, io: Io): Promise<number> {
  const docsDir = resolve(import.meta.dirname, '../../examples/docs');
  const chunking = { ...DEFAULT_CHUNKING };
  return withSession(
    p,
    async (session) => {
      io.out(
        `Ingesting ${docsDir} into ${session.store.collectionName} (${session.embedder.modelId}, PGlite)...`,
      );
      const r = await ingestPaths(session, [docsDir], chunking, { prune: true, json: false }, io);
      io.out(
        `${r.indexed} indexed, ${r.unchanged} unchanged, ${r.failed} failed; ${r.chunksEmbedded} chunks embedded in ${r.seconds}s`,
      );
      const retriever = new Retriever(session.store, retrievalFrom(p, 3));
      for (const q of DEMO_QUERIES) {
        io.out(`\nQ: ${q}`);
        renderHits(await retriever.retrieve(q), q, io);
      }
      io.out('\nTry your own: npx ai4rag search "<question>" --collection ai4rag_examples');
      return 0;
    },
    { collection: 'ai4rag_examples' },
  );
}
