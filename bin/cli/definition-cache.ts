/**
 * The experiment state machine's definition, synthesized from the CDK stack once and then read from a cache file:
 * loading aws-cdk-lib and synthesizing take about 2 s, which every `ai4rag experiment` (and `npm start`) paid.
 *
 * The cache file is keyed by a hash of everything the definition is made from: every file under `lib/`, `cdk.json`,
 * `package-lock.json` (the CDK's version) and the synthesis context. It lives in the OS temp folder as
 * `ai4rag-sfn-<uid>-<hash>.json`, and is trusted only as a regular file owned by this user and writable by no one
 * else (`util/private-file.ts`); a file that does not parse as a definition is synthesized again and replaced.
 * `AI4RAG_DEFINITION_CACHE=off` always synthesizes.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type { ExperimentDefinition } from '../../lib/local-definition.js';
import { ENV } from '../../shared/src/config.js';
import { stableStringify } from '../../shared/src/experiment/params.js';
import { readPrivateFile, writePrivateFile } from '../../shared/src/util/private-file.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** Where a definition came from. */
export type DefinitionOrigin = 'cache' | 'synth';

/** Options of {@link experimentDefinition}. */
export interface DefinitionCacheOptions {
  /** Deploy context for the synthesis. */
  context?: Record<string, unknown>;
  /** Folder of the cache files (tests). @default os.tmpdir() */
  dir?: string;
  /** Read and write the cache. @default true unless AI4RAG_DEFINITION_CACHE=off */
  cache?: boolean;
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else if (entry.isFile()) out.push(path);
  }
  return out.sort();
}

/** Hash of the sources of the definition and the context (see the module comment). */
export async function definitionKey(context: Record<string, unknown> = {}): Promise<string> {
  const hash = createHash('sha256');
  const files = [
    ...(await filesUnder(join(ROOT, 'lib'))),
    join(ROOT, 'cdk.json'),
    join(ROOT, 'package-lock.json'),
  ];
  for (const file of files) {
    hash.update(`${relative(ROOT, file)}\0`);
    hash.update(await readFile(file));
    hash.update('\0');
  }
  hash.update(stableStringify(context));
  return hash.digest('hex').slice(0, 32);
}

function isDefinition(value: unknown): value is ExperimentDefinition {
  const v = value as Partial<ExperimentDefinition> | null;
  return (
    typeof v?.definition === 'object' &&
    v.definition !== null &&
    typeof (v.definition as { StartAt?: unknown }).StartAt === 'string' &&
    typeof v.functionIds === 'object' &&
    v.functionIds !== null
  );
}

/**
 * The definition for `context`, from the cache when a trusted file for its key exists, else synthesized (and the
 * cache written). The result is a fresh object the caller may change.
 */
export async function experimentDefinition(
  options: DefinitionCacheOptions = {},
): Promise<ExperimentDefinition & { origin: DefinitionOrigin }> {
  const context = options.context ?? {};
  const cache = options.cache ?? ENV.AI4RAG_DEFINITION_CACHE?.trim().toLowerCase() !== 'off';
  let path: string | undefined;
  if (cache) {
    const key = await definitionKey(context);
    path = join(options.dir ?? tmpdir(), `ai4rag-sfn-${process.getuid?.() ?? 'user'}-${key}.json`);
    const bytes = await readPrivateFile(path);
    if (bytes !== undefined) {
      try {
        const parsed = JSON.parse(bytes.toString('utf8')) as unknown;
        if (isDefinition(parsed)) return { ...parsed, origin: 'cache' };
      } catch {
        // Not JSON: synthesized again below, and replaced.
      }
    }
  }
  // Loaded here, not at the top: synthesizing needs aws-cdk-lib (~1.5 s to load), which no other command uses.
  const { synthExperimentDefinition } = await import('../../lib/local-definition.js');
  const made = synthExperimentDefinition({ context });
  if (path !== undefined) {
    await writePrivateFile(
      path,
      JSON.stringify({ definition: made.definition, functionIds: made.functionIds }),
    );
  }
  return { definition: made.definition, functionIds: made.functionIds, origin: 'synth' };
}
