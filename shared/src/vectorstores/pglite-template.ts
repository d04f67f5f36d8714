/**
 * A new PGlite database starts from a template instead of initdb. The template is an initialized, empty cluster with
 * pgvector created, kept as a tarball (PGlite's `dumpDataDir`) in the OS temp folder: one per PGlite version,
 * pgvector version and user. `npm run bench -- --pglite` times both ways of opening a new database side by side.
 *
 * The first fresh database on a machine runs initdb as before and is then dumped as the template, before any other
 * statement runs in it. The dump is written under a temporary name and renamed, so a reader never sees a partial
 * file; two processes making it at once both write a whole one. A template that PGlite cannot load is deleted, and
 * that database runs initdb instead. The temp folder is shared: a template is used only if it is a regular file (not
 * a link) owned by this user and writable by no one else, and the partial file is created exclusively, so another
 * user can neither plant a database nor redirect the write. `AI4RAG_PGLITE_TEMPLATE=off` turns templates off; any
 * other value names the file to use.
 */
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ENV } from '../config.js';
import { readPrivateFile, writePrivateFile } from '../util/private-file.js';

/** Where the template is, or `false` when templates are off. */
export type PgliteTemplateSetting = string | false;

/** A database opened from the template (`template`), by initdb (`initdb`), or an existing data directory. */
export type PgliteOrigin = 'template' | 'initdb' | 'existing';

const requireFrom = createRequire(import.meta.url);

/** The `version` of an installed package, from the package.json above its resolved entry point. */
function packageVersion(name: string): string {
  let dir = dirname(requireFrom.resolve(name));
  for (let i = 0; i < 4; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === name && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // No package.json here: look one level up.
    }
    dir = dirname(dir);
  }
  return 'unknown';
}

let defaultPath: string | undefined;

/**
 * The template setting: `AI4RAG_PGLITE_TEMPLATE` (`off`, or a file), else
 * `<tmpdir>/ai4rag-pglite-<pglite version>-pgvector-<version>-<uid>.tar`.
 */
export function pgliteTemplateSetting(): PgliteTemplateSetting {
  const given = ENV.AI4RAG_PGLITE_TEMPLATE?.trim();
  if (given === 'off') return false;
  if (given) return given;
  defaultPath ??= join(
    tmpdir(),
    `ai4rag-pglite-${packageVersion('@electric-sql/pglite')}-pgvector-${packageVersion('@electric-sql/pglite-pgvector')}-${process.getuid?.() ?? 'user'}.tar`,
  );
  return defaultPath;
}

/**
 * The template's bytes, or undefined when there is none yet, it cannot be read, or it is not a regular file owned by
 * this user and writable only by them (anyone can write into the temp folder).
 */
export async function readPgliteTemplate(path: string): Promise<Blob | undefined> {
  const bytes = await readPrivateFile(path);
  return bytes === undefined ? undefined : new Blob([new Uint8Array(bytes)]);
}

/**
 * Saves a fresh database's dump as the template (best effort: a failure only means the next database runs initdb).
 * @param dump the `dumpDataDir('none')` of a database in which nothing but `CREATE EXTENSION vector` ran
 */
export async function savePgliteTemplate(path: string, dump: Blob): Promise<void> {
  await writePrivateFile(path, new Uint8Array(await dump.arrayBuffer()));
}

/** Removes a template PGlite could not load, so the next database makes a good one. */
export async function discardPgliteTemplate(path: string): Promise<void> {
  await rm(path, { force: true }).catch(() => undefined);
}
