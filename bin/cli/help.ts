/**
 * The CLI's help: one line per command in the global help, and per command (`ai4rag <cmd> --help`, `ai4rag help
 * <cmd>`) its usage, each of its options with a one-line description, the global options it takes, and an example.
 * Every option a command parses is described here (a test checks it against the commands' option specs).
 */
import { DEFAULT_DATA_DIR } from '../../shared/src/config.js';
import {
  DEFAULT_CHUNKING,
  DEFAULT_COLLECTION,
  LEXICAL_RETRIEVAL,
  SEMANTIC_RETRIEVAL,
} from '../../shared/src/defaults.js';
import { DEFAULT_EMBEDDING_MODEL } from '../../shared/src/embeddings/factory.js';
import { OPTIMIZER_NAMES } from '../../shared/src/optimizer/optimizers.js';

/** The options every command is parsed with; each command takes the ones {@link CommandHelp.globals} lists. */
export type GlobalOption = 'store' | 'data-dir' | 'json' | 'config';

/** One option: its argument's placeholder (none for a boolean) and what it does, in one line. */
interface OptionHelp {
  arg?: string;
  text: string;
}

/** The options of every command, by long name. */
export const OPTION_HELP: Readonly<Record<string, OptionHelp>> = {
  // Global
  store: {
    arg: 'pglite|pgvector|milvus',
    text: 'vector store (default pglite; pgvector reads PGVECTOR_*, milvus MILVUS_URI/TOKEN)',
  },
  'data-dir': {
    arg: 'DIR',
    text: `local data directory: PGlite, experiments, artefacts (default ${DEFAULT_DATA_DIR})`,
  },
  json: { text: 'machine-readable output on stdout' },
  config: {
    arg: 'FILE',
    text: 'options file, keys are the long flag names (default ./ai4rag.config.json if present)',
  },
  // Collection
  collection: {
    arg: 'NAME',
    text: `collection, must start with "ai4rag", [A-Za-z0-9_] (default ${DEFAULT_COLLECTION})`,
  },
  embedding: {
    arg: 'MODEL',
    text: `embedding model (default ${DEFAULT_EMBEDDING_MODEL}); must match the collection's`,
  },
  'embedding-prefixes': {
    arg: 'auto|none|JSON',
    text: 'query/document instruction prefixes (default auto; JSON {"query": "...", "document": "..."})',
  },
  // Indexing
  chunking: {
    arg: 'recursive|hybrid|fixed|semantic|hierarchical',
    text: `chunking method (default ${DEFAULT_CHUNKING.method}); semantic embeds sentence groups, hierarchical indexes children and answers with their parent`,
  },
  'chunk-size': {
    arg: 'N',
    text: `chunk size in tokens, 128..2048 (default ${DEFAULT_CHUNKING.chunkSize})`,
  },
  'chunk-overlap': {
    arg: 'N',
    text: `overlap in tokens, 0..256 and < chunk-size/2; must be 0 for hybrid and semantic (default ${DEFAULT_CHUNKING.chunkOverlap}, 0 for those)`,
  },
  'parent-chunk-size': {
    arg: 'N',
    text: 'hierarchical: parent chunk size in tokens, chunk-size+1..8192 (default 4 × chunk-size)',
  },
  breakpoint: {
    arg: 'percentile|standard_deviation|gradient',
    text: 'semantic: how breakpoints between sentence groups are chosen (default percentile)',
  },
  'breakpoint-amount': {
    arg: 'X',
    text: 'semantic: the percentile, 0..100 (default 95), or standard deviations, 0..10 (default 3)',
  },
  'buffer-size': {
    arg: 'N',
    text: 'semantic: sentences joined on each side of a sentence before embedding, 0..10 (default 1)',
  },
  'min-chunk-size': {
    arg: 'N',
    text: 'semantic: smaller chunks join a neighbour; tokens, 0..chunk-size/2 (default chunk-size/8)',
  },
  prune: { text: 'also remove stored documents no longer in the given folders' },
  memory: {
    arg: 'SIZE',
    text: 'PostgreSQL: maintenance_work_mem of the build, 64MB..64GB (default 256MB); a graph that fits builds far faster',
  },
  'no-index': {
    text: 'do not build the ANN index at the end (a bulk load: build it once with "ai4rag index")',
  },
  writers: {
    arg: 'N',
    text: 'staged writes in flight at once, 1–8 (default 2 with --store pgvector, else 1)',
  },
  // Retrieval
  k: { arg: 'N', text: 'chunks to return (default 5)' },
  'search-mode': {
    arg: 'vector|hybrid',
    text: 'dense only, or dense + BM25 fused (default hybrid)',
  },
  'ranker-strategy': {
    arg: 'rrf|weighted|normalized',
    text: `hybrid fusion (default ${LEXICAL_RETRIEVAL.rankerStrategy} with the local embedder, else ${SEMANTIC_RETRIEVAL.rankerStrategy})`,
  },
  'ranker-k': { arg: 'N', text: `RRF k, 1..100 (default ${SEMANTIC_RETRIEVAL.rankerK})` },
  'ranker-alpha': {
    arg: 'X',
    text: `weighted: dense weight in [0,1) (default ${LEXICAL_RETRIEVAL.rankerAlpha} with the local embedder, else 0.5)`,
  },
  'retrieval-method': {
    arg: 'simple|window',
    text: 'window adds each hit’s neighbouring chunks (default simple)',
  },
  'window-size': { arg: 'N', text: 'neighbours on each side, 1..4 with window (default 1)' },
  filter: {
    arg: 'JSON',
    text: 'metadata filter, e.g. \'{"user.year":{"gte":2020}}\' (eq ne in nin gt gte lt lte startsWith, and/or/not)',
  },
  // Query transforms
  'query-transform': {
    arg: 'none|multi_query|hyde|rm3',
    text: 'rewrite the query before searching (default none; rm3 needs --search-mode hybrid)',
  },
  'multi-queries': { arg: 'N', text: 'multi_query rewrites (default 3)' },
  'rm3-fb-docs': { arg: 'N', text: 'rm3 feedback documents' },
  'rm3-fb-terms': { arg: 'N', text: 'rm3 expansion terms' },
  'rm3-weight': { arg: 'X', text: 'rm3 weight of the original query, [0, 1]' },
  model: {
    arg: 'ID',
    text: 'chat model: answers (ask, chat) and writes multi_query/hyde rewrites (default local/extractive-v1)',
  },
  // Reranking, prices
  rerank: {
    arg: 'MODEL',
    text: 'rerank the candidates with a TEI-compatible cross-encoder (MODEL@name: a named endpoint)',
  },
  'rerank-url': { arg: 'URL', text: 'the reranker endpoint (default AI4RAG_RERANK_BASE_URL)' },
  'rerank-candidates': { arg: 'N', text: 'candidates reranked down to k (default max(20, 4k))' },
  prices: {
    arg: 'FILE',
    text: 'price table, USD per million tokens per model: {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}',
  },
  pattern: {
    arg: 'FILE',
    text: "an experiment's pattern.json: its retrieval and generation settings over its index",
  },
  // index / check
  force: {
    text: 'build below the 20,000-chunk threshold, and index the newest chunks however few',
  },
  merge: {
    text: 'merge every HNSW segment into one (rebuilds the whole index: fastest probes after a bulk load)',
  },
  repair: {
    text: 'fix what the check finds (orphaned chunks, abandoned writes, mismatched records)',
  },
  // eval-retrieval
  corpus: { arg: 'PATH', text: 'folder of documents or a .jsonl corpus' },
  depth: { arg: 'N', text: 'chunks retrieved per question before ranking documents (default 100)' },
  // score
  input: {
    arg: 'FILE',
    text: 'JSON array of {question, answer, contexts, context_ids, ground_truths, ground_truths_context_ids}, or an experiment’s evaluation_results.json',
  },
  seed: { arg: 'N', text: 'random seed (score: bootstrap; experiment: optimizer, default 64)' },
  // experiment
  docs: { arg: 'PATH', text: 'folder of documents, or one file (e.g. a .jsonl corpus)' },
  benchmark: {
    arg: 'FILE[,FILE]',
    text: 'JSON arrays of {question, correct_answers, correct_answer_document_keys (or _ids)}',
  },
  'max-evals': { arg: 'N', text: 'trials, failures included (experiment default 8)' },
  optimizer: { arg: OPTIMIZER_NAMES.join('|'), text: 'optimizer (default: the measured best)' },
  'search-space': {
    arg: 'FILE',
    text: 'JSON overrides of the search space, e.g. {"chunk_size": [512, 1024]}',
  },
  'trial-concurrency': {
    arg: 'N',
    text: 'trials evaluated in parallel per round, 1..10 (default 2)',
  },
  'foundation-models': { arg: 'A,B', text: 'foundation model ids (default local/extractive-v1)' },
  'embedding-models': {
    arg: 'A,B',
    text: `embedding model ids (default ${DEFAULT_EMBEDDING_MODEL})`,
  },
  'sample-questions': { arg: 'N', text: 'a seeded sample of N benchmark questions (default all)' },
  metric: {
    arg: 'NAME',
    text: 'optimization metric (default overall_score; answer_relevance needs --judge-model)',
  },
  'judge-model': { arg: 'ID', text: 'chat model that judges answer_relevance (LLM-as-a-judge)' },
  injection: {
    arg: 'exclude|quote|off',
    text: 'results that look like prompt injection: exclude them and fetch more to fill k (default), mark them, or off',
  },
  citations: {
    text: 'answers cite their sources ([n]); citation_precision is reported per trial (not in overall_score)',
  },
  'dry-run': {
    text: 'print the estimated tokens (and cost) and exit; calls no model, writes nothing',
  },
  'experiment-id': { arg: 'ID', text: 'the same id again resumes from the recorded trials' },
  out: { arg: 'DIR', text: 'also copy the four artefacts to DIR' },
  'record-table': {
    arg: 'FILE',
    text: 'evaluate every valid configuration and write {rows: [{config, score}]} (for optimizer-sim)',
  },
  quiet: { text: 'no progress on stderr' },
  // optimizer-sim
  scores: { arg: 'FILE', text: 'score table written by experiment --record-table' },
  seeds: { arg: 'K', text: 'runs per optimizer, seeds 0..K-1 (default 50)' },
  'batch-size': { arg: 'N', text: 'proposals per round (default 1)' },
  // serve
  port: { arg: 'N', text: 'port (default 8787; 0 picks a free one)' },
  host: { arg: 'HOST', text: 'interface (default 127.0.0.1)' },
  token: {
    arg: 'T',
    text: 'bearer token of every route but /health (default AI4RAG_API_TOKEN, else generated)',
  },
  'documents-dir': {
    arg: 'DIR',
    text: 'folder uploads are stored in (default <data-dir>/documents)',
  },
  log: { text: 'access log, one line per request, on stderr' },
  'log-file': { arg: 'FILE', text: 'access log appended to FILE instead' },
  concurrency: {
    arg: 'N',
    text: 'API requests run at once, the rest queue in arrival order (default 4)',
  },
  workers: {
    arg: 'N',
    text: 'worker threads for local embeddings (serve: and the local model); default one per core, 0: none',
  },
  'stop-timeout': {
    arg: 'S',
    text: 'on SIGINT/SIGTERM, wait up to S seconds for requests and experiments in flight (default 30; a second signal stops at once)',
  },
  // collections / documents
  yes: { text: 'do it without asking (needed when stdin is not a terminal)' },
};

/** A command's help. */
export interface CommandHelp {
  /** One line for the global help. */
  summary: string;
  /** `ai4rag <usage>`. */
  usage: string;
  /** A few lines on what it does. */
  description?: string;
  /** Its own options, by group. */
  groups: ReadonlyArray<readonly [string, readonly string[]]>;
  /** The global options it takes (the others are refused). */
  globals: readonly GlobalOption[];
  examples: readonly string[];
}

const COLLECTION = ['collection', 'embedding', 'embedding-prefixes'] as const;
const CHUNKING = [
  'chunking',
  'chunk-size',
  'chunk-overlap',
  'parent-chunk-size',
  'breakpoint',
  'breakpoint-amount',
  'buffer-size',
  'min-chunk-size',
] as const;
const RETRIEVAL = [
  'k',
  'search-mode',
  'ranker-strategy',
  'ranker-k',
  'ranker-alpha',
  'retrieval-method',
  'window-size',
  'filter',
] as const;
const QUERY_TRANSFORM = [
  'query-transform',
  'multi-queries',
  'rm3-fb-docs',
  'rm3-fb-terms',
  'rm3-weight',
  'model',
] as const;
const RERANK = ['rerank', 'rerank-url', 'rerank-candidates'] as const;
const ALL_GLOBALS: readonly GlobalOption[] = ['store', 'data-dir', 'json', 'config'];

/** Every command's help, in the order of the global help. */
export const COMMAND_HELP: Readonly<Record<string, CommandHelp>> = {
  ingest: {
    summary: 'load, chunk, embed and store documents (files or folders)',
    usage: 'ingest <path>... [options]',
    description:
      'Unchanged documents are skipped; a file that fails to load makes the exit code 1 after the others are stored.',
    groups: [
      ['Collection', COLLECTION],
      ['Indexing', [...CHUNKING, 'prune', 'writers', 'no-index']],
    ],
    globals: ALL_GLOBALS,
    examples: [
      'ai4rag ingest examples/docs',
      'ai4rag ingest examples/docs --chunk-size 256 --json',
      'ai4rag ingest examples/docs --chunking semantic --breakpoint percentile --breakpoint-amount 90',
      'ai4rag ingest examples/docs --chunking hierarchical --chunk-size 128 --parent-chunk-size 1024',
    ],
  },
  search: {
    summary: 'search a collection',
    usage: 'search <query> [options]',
    groups: [
      ['Collection', COLLECTION],
      ['Retrieval', RETRIEVAL],
      ['Query transform', QUERY_TRANSFORM],
      ['Reranking', RERANK],
      ['Guardrails', ['injection']],
    ],
    globals: ALL_GLOBALS,
    examples: [
      'ai4rag search "expense approval limit" --k 3',
      'ai4rag search "annual leave" --filter \'{"document_id": {"startsWith": "people/"}}\'',
    ],
  },
  ask: {
    summary: 'answer from a collection with cited sources, per-step timing and tokens',
    usage: 'ask <question> [options]',
    groups: [
      ['Collection', COLLECTION],
      ['Retrieval', RETRIEVAL],
      ['Query transform', QUERY_TRANSFORM],
      ['Reranking', RERANK],
      ['Answer', ['prices', 'pattern']],
    ],
    globals: ALL_GLOBALS,
    examples: [
      'ai4rag ask "How many days of annual leave do employees get?"',
      'ai4rag ask "..." --pattern .ai4rag/artifacts/experiments/<id>/pattern.json',
    ],
  },
  chat: {
    summary: 'multi-turn conversation on stdin/stdout (history kept; /reset, /exit)',
    usage: 'chat [options]',
    description:
      'Each line read is a user turn, answered through the same handler as the API\u2019s POST /chat with the whole ' +
      'conversation so far. /reset forgets the history, /exit (or end of input) quits.',
    groups: [
      ['Collection', ['collection', 'embedding']],
      ['Answer', ['k', 'search-mode', 'filter', 'model', 'prices', 'pattern']],
    ],
    globals: ALL_GLOBALS,
    examples: ['ai4rag chat', 'printf "How many leave days?\\nAnd carry-over?\\n" | ai4rag chat'],
  },
  'eval-retrieval': {
    summary: 'score retrieval on a corpus + benchmark (recall@k, MRR@10, nDCG@10)',
    usage: 'eval-retrieval --corpus PATH --benchmark FILE [options]',
    description:
      'Indexes the corpus in a throwaway collection (in memory with pglite, dropped afterwards on a server) unless ' +
      '--collection is given.',
    groups: [
      ['Input', ['corpus', 'benchmark', 'depth']],
      ['Collection', COLLECTION],
      ['Indexing', CHUNKING],
      ['Retrieval', RETRIEVAL.filter((o) => o !== 'k')],
      ['Query transform', QUERY_TRANSFORM],
    ],
    globals: ['store', 'json', 'config'],
    examples: [
      'ai4rag eval-retrieval --corpus examples/docs --benchmark examples/benchmark.json --json',
    ],
  },
  documents: {
    summary: 'list the documents of a collection; documents delete <key> removes one',
    usage: 'documents [list | delete <key>] [options]',
    groups: [['Collection', [...COLLECTION, 'yes']]],
    globals: ALL_GLOBALS,
    examples: ['ai4rag documents', 'ai4rag documents delete policies/travel-and-expenses.md --yes'],
  },
  collections: {
    summary: 'list the collections of the store; collections drop <name> removes one',
    usage: 'collections list | drop <name> [--yes] [options]',
    groups: [['Options', ['yes']]],
    globals: ['store', 'data-dir', 'json', 'config'],
    examples: ['ai4rag collections list', 'ai4rag collections drop ai4rag_handbook --yes'],
  },
  stats: {
    summary: 'collection statistics',
    usage: 'stats [options]',
    groups: [['Collection', COLLECTION]],
    globals: ALL_GLOBALS,
    examples: ['ai4rag stats --json'],
  },
  index: {
    summary: "build the collection's ANN (HNSW) index now, and bring its BM25 weights up to date",
    usage: 'index [--force] [--merge] [options]',
    description:
      'Ingest does it every 20,000 chunks and at its end once the collection has 20,000; concurrently on PostgreSQL. ' +
      'Chunks added since the last build become a new segment (from 5,000 rows and 1/16 of those indexed, always at 20,000); ' +
      'a segment holding nearly as many rows as the one before it merges with it, and beyond four segments the adjacent pair with the fewest rows merges. ' +
      'Each segment it builds is reported on stderr when it starts and ends, and on PostgreSQL its progress every 30 s. ' +
      "Past 100,000 chunks (pgvector) it also folds the keyword index's new postings and packs its long lists, which ingest's own builds leave to it.",
    groups: [['Collection', [...COLLECTION, 'force', 'merge', 'memory']]],
    globals: ALL_GLOBALS,
    examples: [
      'ai4rag index --force',
      'ai4rag index --store pgvector --memory 4GB',
      'ai4rag index --store pgvector --merge',
    ],
  },
  check: {
    summary: "verify a collection's integrity (exit 0 clean, 1 problems left)",
    usage: 'check [--repair] [options]',
    groups: [['Collection', [...COLLECTION, 'repair']]],
    globals: ALL_GLOBALS,
    examples: ['ai4rag check', 'ai4rag check --repair'],
  },
  score: {
    summary: 'unitxt RAG metrics with 95% BCa bootstrap CIs for answers (a table; --json for JSON)',
    usage: 'score --input FILE [--seed N] [--json]',
    groups: [['Input', ['input', 'seed']]],
    globals: ['json', 'config'],
    examples: [
      'ai4rag score --input answers.json',
      'ai4rag score --input .ai4rag/artifacts/experiments/<id>/evaluation_results.json --json',
    ],
  },
  experiment: {
    summary: 'RAG-optimization experiment through the synthesized state machine, locally',
    usage: 'experiment --docs PATH --benchmark FILE[,FILE] [options]',
    description:
      'Writes leaderboard.json, pattern.json, evaluation_results.json and report.html under ' +
      '<data-dir>/artifacts/experiments/<id> (what `npm start` runs).',
    groups: [
      ['Input', ['docs', 'benchmark', 'search-space', 'sample-questions']],
      [
        'Run',
        [
          'max-evals',
          'optimizer',
          'seed',
          'trial-concurrency',
          'workers',
          'foundation-models',
          'embedding-models',
          'metric',
          'judge-model',
          'citations',
          'experiment-id',
          'dry-run',
          'quiet',
        ],
      ],
      ['Reranking', RERANK],
      ['Output', ['prices', 'out', 'record-table']],
    ],
    globals: ALL_GLOBALS,
    examples: [
      'ai4rag experiment --docs examples/docs --benchmark examples/benchmark.json --max-evals 2',
    ],
  },
  'optimizer-sim': {
    summary: 'replay optimizers over a recorded score table',
    usage: 'optimizer-sim --scores FILE [options]',
    groups: [['Options', ['scores', 'optimizer', 'max-evals', 'seeds', 'batch-size']]],
    globals: ['json', 'config'],
    examples: [
      'ai4rag optimizer-sim --scores test/fixtures/optimizer/clapnq-dev-scores.json --optimizer gam,random --seeds 5',
    ],
  },
  serve: {
    summary: 'serve the query API and the web app locally through the Lambda handlers',
    usage: 'serve [options]',
    description: 'Every route but /health needs "Authorization: Bearer <token>".',
    groups: [
      [
        'Server',
        [
          'port',
          'host',
          'token',
          'documents-dir',
          'log',
          'log-file',
          'concurrency',
          'workers',
          'stop-timeout',
        ],
      ],
      ['Answers', ['collection', 'pattern', 'prices', ...RERANK]],
    ],
    globals: ['store', 'data-dir', 'config'],
    examples: ['ai4rag serve --port 8080'],
  },
  demo: {
    summary: 'ingest examples/docs into ai4rag_examples and answer sample searches',
    usage: 'demo',
    groups: [],
    globals: ['store', 'data-dir', 'config'],
    examples: ['ai4rag demo'],
  },
};

/** Commands whose help their own module prints (listed in the global help). */
export const EXTERNAL_COMMANDS: Readonly<Record<string, string>> = {
  experiments:
    'list the experiments of the data folder; remove ID... [--yes] deletes them and their indexes',
};

function optionLine(name: string): string {
  const o = OPTION_HELP[name];
  const left = `  --${name}${o?.arg !== undefined ? ` ${o.arg}` : ''}`;
  const text = o?.text ?? '';
  return left.length < 32 ? `${left.padEnd(32)}${text}` : `${left}\n${' '.repeat(32)}${text}`;
}

/** The global help: the commands, the global options and where to read more. */
export function globalHelp(): string {
  const names = [...Object.keys(COMMAND_HELP), ...Object.keys(EXTERNAL_COMMANDS)];
  const width = Math.max(...names.map((n) => n.length)) + 2;
  const lines = [
    'ai4rag — RAG knowledge base, query and configuration optimizer on the embedded default (PGlite + pgvector)',
    '',
    'Usage: ai4rag <command> [options]     ai4rag <command> --help for its options and an example',
    '',
    'Commands:',
    ...Object.entries(COMMAND_HELP).map(([n, c]) => `  ${n.padEnd(width)}${c.summary}`),
    ...Object.entries(EXTERNAL_COMMANDS).map(([n, s]) => `  ${n.padEnd(width)}${s}`),
    '',
    'Global options (each command lists those it takes; the others are refused):',
    ...(['store', 'data-dir', 'json', 'config'] as const).map(optionLine),
    '  -h, --help                    help (of a command: ai4rag <command> --help, or ai4rag help <command>)',
    '  -V, --version                 the version (ai4rag-serverless <version>)',
    '',
    'Options also come from ai4rag.config.json in the current directory (or --config FILE): keys are the long',
    'flag names, e.g. {"data-dir": ".ai4rag", "collection": "ai4rag_handbook"}; flags override it.',
    '',
    'Exit codes: 0 success, 1 failure, 2 usage or input error.',
  ];
  return lines.join('\n');
}

/** A command's own help, or undefined for an unknown command. */
export function commandHelp(command: string): string | undefined {
  const c = COMMAND_HELP[command];
  if (c === undefined) return undefined;
  const lines = [`ai4rag ${command} — ${c.summary}`, '', `Usage: ai4rag ${c.usage}`];
  if (c.description !== undefined) lines.push('', c.description);
  for (const [title, options] of c.groups) {
    lines.push('', `${title}:`, ...options.map(optionLine));
  }
  lines.push('', 'Global options:', ...c.globals.map(optionLine), '  -h, --help');
  lines.push(
    '',
    c.examples.length > 1 ? 'Examples:' : 'Example:',
    ...c.examples.map((e) => `  ${e}`),
  );
  return lines.join('\n');
}

/** The options a command takes besides the globals, as its help lists them. */
export function documentedOptions(command: string): string[] {
  return (COMMAND_HELP[command]?.groups ?? []).flatMap(([, options]) => [...options]);
}
