// Where the bundled CLI lives and whether it is current. `scripts/build-cli.ts` (run by `npm ci`) bundles
// bin/cli/main.ts and its sources into dist/cli with esbuild, the packages left to node_modules; `bin/ai4rag.mjs`
// loads that bundle when it is current and the TypeScript sources through tsx otherwise. Plain JavaScript: it runs
// before any loader is registered.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root (this file is in bin/). */
export const ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * The bundle's folder. Two levels below the root, as bin/cli/ is: the sources' paths relative to their own
 * module (`../../package.json`, `../../web/dist/`, `./cpu-tasks.js`) resolve the same from the bundle.
 */
export const BUNDLE_DIR = fileURLToPath(new URL('../dist/cli/', import.meta.url));

/** The manifest the build writes beside the bundle: when it started and which sources went in. */
export const MANIFEST = 'inputs.json';

/**
 * The reason the bundle cannot be used, or `undefined` when it is current: present, built from sources none of
 * which changed (or disappeared) since the build started, and not turned off by `AI4RAG_CLI_BUNDLE=off`.
 * @param env the environment to read `AI4RAG_CLI_BUNDLE` from
 * @param dir the bundle's folder (tests); its manifest's inputs are relative to `root`
 */
export function bundleStale(env = process.env, dir = BUNDLE_DIR, root = ROOT) {
  if ((env.AI4RAG_CLI_BUNDLE ?? '').trim().toLowerCase() === 'off') return 'AI4RAG_CLI_BUNDLE=off';
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8'));
  } catch {
    return 'no bundle';
  }
  if (typeof manifest?.startedAt !== 'number' || !Array.isArray(manifest.inputs))
    return 'no manifest';
  for (const input of manifest.inputs) {
    let mtime;
    try {
      mtime = statSync(join(root, input)).mtimeMs;
    } catch {
      return `${input} is gone`;
    }
    if (mtime > manifest.startedAt) return `${input} changed`;
  }
  return undefined;
}
