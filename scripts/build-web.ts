/**
 * Builds the web app of `ai4rag serve` (web/src, Preact) with esbuild into web/dist: index.html, assets/app.js and
 * assets/app.css. Run by `npm ci` (the `prepare` script) and by the browser tests; `node --import tsx
 * scripts/build-web.ts` rebuilds it by hand.
 */
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

/** The web app's folder (sources in src/, the page in index.html). */
export const WEB_DIR = fileURLToPath(new URL('../web/', import.meta.url));

/**
 * Bundles the app into `outDir` (default web/dist), minified, with no source maps (the page's CSP allows only
 * this origin and nothing inline).
 * @example await buildWeb();
 */
export async function buildWeb(outDir: string = join(WEB_DIR, 'dist')): Promise<string> {
  await rm(outDir, { recursive: true, force: true });
  await mkdir(join(outDir, 'assets'), { recursive: true });
  await build({
    entryPoints: { app: join(WEB_DIR, 'src', 'main.tsx') },
    outdir: join(outDir, 'assets'),
    bundle: true,
    format: 'esm',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  await copyFile(join(WEB_DIR, 'index.html'), join(outDir, 'index.html'));
  return outDir;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const out = await buildWeb();
  process.stdout.write(`web app built in ${out}\n`);
}
