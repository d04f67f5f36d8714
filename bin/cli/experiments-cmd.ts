/**
 * `ai4rag experiments list [--json]` and `ai4rag experiments remove <id>… [--yes]`: the experiments of a data
 * folder, and their removal with the indexes (collections) no other experiment uses.
 */
import { createInterface } from 'node:readline/promises';
import { createLocalRuntime } from '../../functions/_shared/runtime.js';
import { DEFAULT_DATA_DIR, ENV } from '../../shared/src/config.js';
import { NotFoundError, ValidationError } from '../../shared/src/errors.js';
import {
  checkExperimentId,
  type ExperimentSummary,
  listExperimentIds,
  listExperiments,
  type RemovalReport,
  removeExperiment,
} from '../../shared/src/experiment/catalog.js';
import { STORE_KINDS, type StoreKind } from '../../shared/src/runtime/open-store.js';
import { type OptionSpec, oneOf, parse, str } from './args.js';

/** Flags of `ai4rag experiments`. */
export const EXPERIMENTS_OPTIONS: OptionSpec = { yes: { type: 'boolean', short: 'y' } };

/** Help of `ai4rag experiments`. */
export const EXPERIMENTS_HELP = `Usage: ai4rag experiments list [--json] [--data-dir DIR]
       ai4rag experiments remove <id>... [--yes] [--json] [--data-dir DIR] [--store KIND]

  list                 the experiments of the data folder, newest first: status, trials, best pattern
  remove <id>...       delete the experiments' artefacts and drop the indexes (collections) that no other
                       experiment uses; asks for confirmation on a terminal, needs --yes otherwise
  -y, --yes            remove without asking

Example: ai4rag experiments remove exp-20261201-164328 --yes`;

/** Where the command writes and how it asks. */
export interface ExperimentsIo {
  out(line: string): void;
  err(line: string): void;
  /** Asks a yes/no question; absent: on the terminal when stdin is one, else `--yes` is needed. */
  confirm?: (question: string) => Promise<boolean>;
}

function terminalConfirm(): ExperimentsIo['confirm'] {
  if (process.stdin.isTTY !== true) return undefined;
  return async (question) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
    } finally {
      rl.close();
    }
  };
}

const defaultIo: ExperimentsIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

function trialsText(s: ExperimentSummary): string {
  const t = s.trials;
  const recorded = t.done + t.failed + t.running;
  return `${recorded}/${s.max_evals}${t.failed > 0 ? ` (${t.failed} failed)` : ''}`;
}

function listLines(experiments: ExperimentSummary[]): string[] {
  if (experiments.length === 0) return ['No experiments (run one with: ai4rag experiment …).'];
  const rows = experiments.map((s) => [
    s.experiment_id,
    s.created_at.replace('T', ' ').slice(0, 16),
    s.status,
    trialsText(s),
    s.best ? `${s.best.pattern_name} ${s.best.score.toFixed(4)} ${s.optimization_metric}` : '-',
    String(s.collections.length),
  ]);
  const header = ['ID', 'CREATED', 'STATUS', 'TRIALS', 'BEST', 'INDEXES'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

function removalLines(r: RemovalReport): string[] {
  const lines = [
    `Removed ${r.experiment_id}: ${r.objects_deleted} objects, ${r.collections_dropped.length} index(es) dropped${r.collections_dropped.length > 0 ? ` (${r.collections_dropped.join(', ')})` : ''}`,
  ];
  for (const k of r.collections_kept) {
    lines.push(`  kept ${k.name}: used by ${k.used_by.join(', ')}`);
  }
  if (r.cache_entries_deleted > 0) {
    lines.push(
      `  ${r.cache_entries_deleted} cached result(s) bound to the dropped indexes removed`,
    );
  }
  return lines;
}

/**
 * Runs `ai4rag experiments <list|remove> …`. Returns the exit code: 0 done, 1 failure, 2 usage error (an unknown
 * sub-command or experiment id, a removal without --yes off a terminal, a refused confirmation is 1).
 * @example process.exitCode = await runExperimentsCommand(['list', '--json']);
 */
export async function runExperimentsCommand(
  argv: string[],
  io: ExperimentsIo = defaultIo,
): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === 'help' || argv.includes('--help') || argv.includes('-h')) {
    io.out(EXPERIMENTS_HELP);
    return sub === undefined ? 2 : 0;
  }
  try {
    const p = parse(rest, EXPERIMENTS_OPTIONS);
    const json = p.values.json === true;
    const store = oneOf<StoreKind>(
      p,
      'store',
      STORE_KINDS,
      (ENV.AI4RAG_STORE?.trim() as StoreKind | undefined) || 'pglite',
    );
    const dataDir = str(p, 'data-dir') ?? DEFAULT_DATA_DIR;
    if (sub === 'list') {
      if (p.positionals.length > 0) {
        throw new ValidationError(`list takes no arguments; got "${p.positionals.join(' ')}"`);
      }
      const runtime = createLocalRuntime({ dataDir, env: ENV, store });
      try {
        const experiments = await listExperiments(runtime.objectStore);
        if (json) io.out(JSON.stringify(experiments));
        else for (const line of listLines(experiments)) io.out(line);
        return 0;
      } finally {
        await runtime.close();
      }
    }
    if (sub !== 'remove') {
      throw new ValidationError(`unknown sub-command "${sub}" (use list or remove)`);
    }
    const ids = p.positionals;
    if (ids.length === 0) {
      throw new ValidationError('give the id of at least one experiment to remove');
    }
    for (const id of ids) checkExperimentId(id);
    const runtime = createLocalRuntime({ dataDir, env: ENV, store });
    try {
      // Every id is checked before anything is removed.
      const known = new Set(await listExperimentIds(runtime.objectStore));
      const unknown = ids.filter((id) => !known.has(id));
      if (unknown.length > 0) {
        throw new ValidationError(
          `no experiment ${unknown.map((id) => `"${id}"`).join(', ')} in ${dataDir} (see: ai4rag experiments list)`,
        );
      }
      if (p.values.yes !== true) {
        const confirm = io.confirm ?? terminalConfirm();
        if (confirm === undefined) {
          throw new ValidationError(
            `removing ${ids.join(', ')} needs --yes when stdin is not a terminal`,
          );
        }
        if (!(await confirm(`Remove ${ids.join(', ')} and the indexes only they use?`))) {
          io.err('nothing removed');
          return 1;
        }
      }
      const dropCollection = async (collection: string, model: string | undefined) => {
        try {
          const embedder = await runtime.embedder(model);
          const vs = await runtime.openStore(collection, embedder, { createIfMissing: false });
          await vs.drop();
          return true;
        } catch (error) {
          if (error instanceof NotFoundError) return false;
          throw error;
        }
      };
      const reports: RemovalReport[] = [];
      for (const id of [...new Set(ids)]) {
        reports.push(await removeExperiment(runtime.objectStore, id, { dropCollection }));
      }
      if (json) io.out(JSON.stringify(reports));
      else for (const r of reports) for (const line of removalLines(r)) io.out(line);
      return 0;
    } finally {
      await runtime.close();
    }
  } catch (error) {
    io.err(`ai4rag experiments ${sub}: ${(error as Error).message}`);
    return error instanceof ValidationError ? 2 : 1;
  }
}
