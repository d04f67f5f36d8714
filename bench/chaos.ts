/**
 * `npm run chaos`: the ingestion chaos campaign of test/chaos at a larger scale, printing what it measured.
 *
 * 1. Writer races (the reproduction of the lost-chunks report): two versions of 35 documents of about 300 chunks
 *    each, ingested by two `ai4rag ingest` processes at once into one PostgreSQL collection, CHAOS_RACES times with
 *    different start offsets; then `ai4rag check` on the collection.
 * 2. SIGKILL campaigns on PGlite and PostgreSQL: CHAOS_KILLS seeded kill points each (while an embedding request
 *    waits, or 0–400 ms after its answer, while the vectors are written or committed), the invariants checked after
 *    every kill and after the completing re-run.
 * 3. The poison corpus (NUL text, DOCX and PDF bombs, a lying zip directory, 100,000-deep HTML): peak RSS of the
 *    ingest process, good documents indexed.
 *
 * "Lost" counts documents whose visible chunks are not exactly those of their recorded version (none or too few
 * chunks, or a mix of versions); "orphans visible" counts chunks search or the stats see outside every recorded
 * version; "duplicated" counts chunk ids seen twice in one document. All three must be 0.
 *
 * PostgreSQL comes from PGVECTOR_* or is started with ../shared/tools/pg-with-pgvector (as root); without it, the
 * PostgreSQL rows are skipped.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV } from '../shared/src/config.js';
import { pgVectorConfigFromEnv } from '../shared/src/vectorstores/config.js';
import {
  type ChaosFake,
  checkInvariants,
  docKeys,
  expectedVersions,
  ingestWith,
  killCampaign,
  lastJson,
  pgliteTarget,
  pgTarget,
  runCli,
  startChaosFake,
  type Target,
  writeCorpus,
  writePoisonCorpus,
} from '../test/chaos/harness.js';
import { startPostgres } from './postgres.js';

const KILLS = Number(ENV.CHAOS_KILLS ?? 20);
const RACES = Number(ENV.CHAOS_RACES ?? 3);

interface Tally {
  runs: number;
  survived: number;
  lost: number;
  duplicated: number;
  orphans: number;
  checkClean: boolean;
}

const tally = (): Tally => ({
  runs: 0,
  survived: 0,
  lost: 0,
  duplicated: 0,
  orphans: 0,
  checkClean: true,
});

async function races(target: Target, chaos: ChaosFake, root: string): Promise<Tally> {
  const t = tally();
  const keys = docKeys(35);
  for (let i = 0; i < RACES; i++) {
    const collection = `ai4rag_chaos_race_${Date.now().toString(36)}_${i}`;
    const dirA = join(root, `race-a${i}`);
    const dirB = join(root, `race-b${i}`);
    await writeCorpus(dirA, `a${i}`, keys, 300);
    await writeCorpus(dirB, `b${i}`, keys, 300);
    const versions = await expectedVersions([dirA, dirB]);
    const [a, b] = await Promise.all([
      ingestWith(target, chaos, dirA, collection),
      new Promise((r) => setTimeout(r, i * 400)).then(() =>
        ingestWith(target, chaos, dirB, collection),
      ),
    ]);
    t.runs += 1;
    const report = await target.inspect(collection, (store) => checkInvariants(store, versions));
    const ok = a.code === 0 && b.code === 0 && report.documents === keys.length;
    if (ok && report.documentsInconsistent.length === 0 && report.orphansVisible === 0) {
      t.survived += 1;
    }
    t.lost += report.documentsInconsistent.length + (keys.length - report.documents);
    t.duplicated += report.duplicates;
    t.orphans += report.orphansVisible;
    const check = await runCli(
      ['check', ...target.args(collection), '--embedding', 'fake-embedding'],
      {
        env: { ...target.env, OPENAI_BASE_URL: chaos.fake.baseURL, OPENAI_API_KEY: 'test-key' },
      },
    );
    t.checkClean &&= check.code === 0;
  }
  return t;
}

async function kills(target: Target, chaos: ChaosFake, root: string, seed: number): Promise<Tally> {
  const t = tally();
  const result = await killCampaign({
    target,
    chaos,
    root,
    collection: `ai4rag_chaos_kill_${Date.now().toString(36)}`,
    docs: 90,
    paragraphs: 50,
    kills: KILLS,
    seed,
  });
  for (const k of result.kills) {
    t.runs += 1;
    if (k.report.documentsInconsistent.length === 0 && k.report.orphansVisible === 0) {
      t.survived += 1;
    }
    t.lost += k.report.documentsInconsistent.length + (90 - k.report.documents);
    t.duplicated += k.report.duplicates;
    t.orphans += k.report.orphansVisible;
  }
  const killed = result.kills.filter((k) => k.killed).length;
  process.stderr.write(
    `  ${target.name}: ${killed} of ${result.kills.length} runs died of their kill\n`,
  );
  t.lost += result.finalReport.documentsInconsistent.length;
  t.orphans += result.finalReport.orphansVisible;
  t.checkClean = result.final.code === 0 && result.integrity.clean;
  return t;
}

async function poison(
  root: string,
): Promise<{ rssMiB: number; baselineMiB: number; indexed: number; good: number }> {
  const dir = join(root, 'poison');
  const { indexable } = await writePoisonCorpus(dir, 200);
  // The baseline: the good documents alone, through the same command.
  const goodDir = join(root, 'poison-good');
  await mkdir(goodDir, { recursive: true });
  for (const key of indexable) await copyFile(join(dir, key), join(goodDir, key));
  const peak = async (docs: string, name: string) => {
    const dataDir = join(root, `${name}-data`);
    // PGlite's first start on a new data directory is measured apart from ingestion.
    await runCli(['stats', '--data-dir', dataDir, '--collection', 'ai4rag_none']);
    const rssFile = join(root, `${name}.rss`);
    const run = await runCli(
      ['ingest', docs, '--data-dir', dataDir, '--collection', 'ai4rag_poison', '--json'],
      { rssFile },
    );
    return {
      mib: Math.round(Number(await readFile(rssFile, 'utf8')) / 2 ** 20),
      indexed: lastJson<{ indexed: number }>(run).indexed,
    };
  };
  const bombs = await peak(dir, 'poison');
  const baseline = await peak(goodDir, 'good');
  return {
    rssMiB: bombs.mib,
    baselineMiB: baseline.mib,
    indexed: bombs.indexed,
    good: indexable.length,
  };
}

function row(name: string, t: Tally | undefined): string {
  if (!t) return `${name.padEnd(28)} skipped (no PostgreSQL)`;
  return [
    name.padEnd(28),
    `${t.survived}/${t.runs}`.padStart(9),
    String(t.lost).padStart(6),
    String(t.duplicated).padStart(11),
    String(t.orphans).padStart(16),
    (t.checkClean ? 'clean' : 'NOT CLEAN').padStart(10),
  ].join(' ');
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ai4rag-chaos-bench-'));
  const server = startPostgres('55441');
  const chaos = await startChaosFake();
  const raceChaos = await startChaosFake(5);
  try {
    const env = { ...ENV, ...(server?.env ?? {}) };
    const pg = env.PGVECTOR_HOST ? pgTarget(pgVectorConfigFromEnv(env)) : undefined;
    process.stderr.write('writer races…\n');
    const racePg = pg ? await races(pg, raceChaos, root) : undefined;
    process.stderr.write('kills on PGlite…\n');
    const killPglite = await kills(pgliteTarget(join(root, 'pglite')), chaos, root, 101);
    process.stderr.write('kills on PostgreSQL…\n');
    const killPg = pg ? await kills(pg, chaos, root, 202) : undefined;
    process.stderr.write('poison corpus…\n');
    const bombs = await poison(root);
    await pg?.cleanup();

    console.log('\nIngestion chaos (npm run chaos)\n');
    console.log(
      `${'scenario'.padEnd(28)} ${'survived'.padStart(9)} ${'lost'.padStart(6)} ${'duplicated'.padStart(11)} ${'orphans visible'.padStart(16)} ${'check'.padStart(10)}`,
    );
    console.log(row(`writer races, PostgreSQL`, racePg));
    console.log(row(`SIGKILL, PGlite`, killPglite));
    console.log(row(`SIGKILL, PostgreSQL`, killPg));
    const all = [racePg, killPglite, killPg].filter((t): t is Tally => t !== undefined);
    const sum = (f: (t: Tally) => number) => all.reduce((a, t) => a + f(t), 0);
    console.log(
      `\nkills survived: ${sum((t) => t.survived) - (racePg?.survived ?? 0)}/${(killPglite.runs + (killPg?.runs ?? 0)).toString()}` +
        `, writer races run: ${racePg?.runs ?? 0}` +
        `, documents lost: ${sum((t) => t.lost)}, chunks duplicated: ${sum((t) => t.duplicated)}` +
        `, orphans visible: ${sum((t) => t.orphans)}`,
    );
    console.log(
      `poison corpus: ${bombs.indexed}/${bombs.good} good documents indexed, peak RSS ${bombs.rssMiB} MiB; ` +
        `the good documents alone ${bombs.baselineMiB} MiB (PGlite data directories already initialised)`,
    );
  } finally {
    await chaos.fake.close();
    await raceChaos.fake.close();
    server?.stop();
    await rm(root, { recursive: true, force: true });
  }
}

await main();
