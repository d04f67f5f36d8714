/**
 * The Lambda bundles exactly as the stack builds them: every function of both store variants, read from the
 * synthesized template (its entry and what its bundle holds, the `ai4rag:entry` / `ai4rag:bundle` metadata),
 * built in process by esbuild with the options the stack hands NodejsFunction (`bundlingOptions`,
 * lib/constructs/node-function.ts). `npm run bench` prints each bundle's size and cold import time;
 * test/cdk/bundles.test.ts checks what the bundles contain.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Template } from 'aws-cdk-lib/assertions';
import { type BundlingOptions, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { type BuildOptions, build, type Metafile } from 'esbuild';
import { createAi4ragApp } from '../lib/app.js';
import {
  BUNDLE_METADATA_KEY,
  type BundleContents,
  bundlingOptions,
  ENTRY_METADATA_KEY,
  REPO_ROOT,
} from '../lib/constructs/node-function.js';

/** CDK context of each store variant (the Zilliz endpoint is a placeholder: nothing connects). */
export const VARIANT_CONTEXT = {
  pgvector: { vectorStore: 'pgvector' },
  zilliz: { vectorStore: 'zilliz', zillizUri: 'https://bundles.zilliz.example' },
} as const;

export type Variant = keyof typeof VARIANT_CONTEXT;

/** One function of the synthesized stack, as bundled. */
export interface FunctionBundle {
  variant: Variant;
  /** Construct id (the logical id without its hash), e.g. `SearchFunction`. */
  id: string;
  /** Handler entry relative to the repository root, e.g. `functions/search/handler.ts`. */
  entry: string;
  contents: BundleContents;
}

/** Every function of a variant's stack that the app bundles (CDK's own custom-resource handlers excluded). */
export function functionBundles(variant: Variant): FunctionBundle[] {
  const { stack } = createAi4ragApp({
    context: { ...VARIANT_CONTEXT[variant] },
    skipBundling: true,
    nag: false,
  });
  const resources = Template.fromStack(stack).findResources('AWS::Lambda::Function');
  const bundles: FunctionBundle[] = [];
  for (const [logicalId, resource] of Object.entries(resources)) {
    const metadata = (resource as { Metadata?: Record<string, unknown> }).Metadata ?? {};
    const entry = metadata[ENTRY_METADATA_KEY];
    if (typeof entry !== 'string') continue;
    bundles.push({
      variant,
      id: logicalId.replace(/[0-9A-F]{8}$/, ''),
      entry,
      contents: metadata[BUNDLE_METADATA_KEY] as BundleContents,
    });
  }
  return bundles.sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * The esbuild options NodejsFunction derives from `bundling` (its `--bundle --target --platform --format
 * --minify --sourcemap --external --define --main-fields --banner:js` flags, `.mjs` output for ESM). Throws on a
 * setting it does not translate, so a new stack option cannot be silently left out of the bench and tests.
 */
export function esbuildOptionsOf(bundling: BundlingOptions): BuildOptions {
  const handled = new Set([
    'format',
    'target',
    'platform',
    'minify',
    'sourceMap',
    'mainFields',
    'banner',
    'externalModules',
    'define',
    'forceDockerBundling',
  ]);
  const unknown = Object.keys(bundling).filter((k) => !handled.has(k));
  if (unknown.length > 0) {
    throw new Error(`esbuildOptionsOf: bundling option(s) not translated: ${unknown.join(', ')}`);
  }
  return {
    bundle: true,
    format: bundling.format === OutputFormat.ESM ? 'esm' : 'cjs',
    ...(bundling.target !== undefined && { target: bundling.target }),
    platform: 'node',
    minify: bundling.minify === true,
    sourcemap: bundling.sourceMap === true,
    ...(bundling.mainFields !== undefined && { mainFields: bundling.mainFields }),
    ...(bundling.banner !== undefined && { banner: { js: bundling.banner } }),
    // NodejsFunction externalises the runtime's @aws-sdk/* by default; the stack lists its own externals.
    external: bundling.externalModules ?? ['@aws-sdk/*'],
    ...(bundling.define !== undefined && { define: bundling.define }),
    logLevel: 'error',
  };
}

/** A built bundle: its size and the bytes each package contributes to it. */
export interface BuiltBundle {
  /** The bundle file (written only when an output folder is given). */
  file: string;
  /** Size of the bundle (the asset holds this one file: no source map). */
  bytes: number;
  metafile: Metafile;
  /** Bytes of the output per package (`(app)` for the repository's own code). */
  packages: Map<string, number>;
}

/** The package a metafile input path belongs to (`@scope/name`, `name`, or `(app)`). */
export function packageOf(input: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules\/)/.exec(input);
  return match?.[1] ?? '(app)';
}

/**
 * Builds one function's bundle with the stack's options; in memory unless `outdir` is given (then
 * `<outdir>/index.mjs`, the name NodejsFunction gives an ESM bundle).
 */
export async function buildBundle(fn: FunctionBundle, outdir?: string): Promise<BuiltBundle> {
  const file = join(outdir ?? '/nonexistent', 'index.mjs');
  if (outdir !== undefined) mkdirSync(outdir, { recursive: true });
  const result = await build({
    ...esbuildOptionsOf(bundlingOptions(fn.contents)),
    entryPoints: [resolve(REPO_ROOT, fn.entry)],
    outfile: file,
    absWorkingDir: REPO_ROOT,
    write: outdir !== undefined,
    metafile: true,
  });
  const output = Object.values(result.metafile.outputs).find((o) => o.entryPoint !== undefined);
  if (output === undefined) throw new Error(`no output for ${fn.entry}`);
  const packages = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
    if (bytesInOutput === 0) continue;
    const name = packageOf(input);
    packages.set(name, (packages.get(name) ?? 0) + bytesInOutput);
  }
  return { file, bytes: output.bytes, metafile: result.metafile, packages };
}

/**
 * Builds many functions' bundles: one esbuild run per distinct bundling contents, every entry of that run parsed
 * once (without code splitting each output is whole, as in {@link buildBundle}). Not written to disk.
 * @returns each function's bundle, by its construct id.
 */
export async function buildBundles(
  fns: readonly FunctionBundle[],
): Promise<Map<string, BuiltBundle>> {
  const groups = new Map<string, FunctionBundle[]>();
  for (const fn of fns) {
    const key = JSON.stringify(fn.contents);
    groups.set(key, [...(groups.get(key) ?? []), fn]);
  }
  const built = new Map<string, BuiltBundle>();
  for (const group of groups.values()) {
    const first = group[0] as FunctionBundle;
    const entries = [...new Set(group.map((fn) => fn.entry))];
    const result = await build({
      ...esbuildOptionsOf(bundlingOptions(first.contents)),
      entryPoints: entries.map((entry) => resolve(REPO_ROOT, entry)),
      outdir: '/nonexistent',
      absWorkingDir: REPO_ROOT,
      write: false,
      metafile: true,
    });
    for (const fn of group) {
      const output = Object.entries(result.metafile.outputs).find(
        ([, o]) =>
          o.entryPoint !== undefined &&
          resolve(REPO_ROOT, o.entryPoint) === resolve(REPO_ROOT, fn.entry),
      );
      if (output === undefined) throw new Error(`no output for ${fn.entry}`);
      const [file, out] = output;
      const packages = new Map<string, number>();
      for (const [input, { bytesInOutput }] of Object.entries(out.inputs)) {
        if (bytesInOutput === 0) continue;
        const name = packageOf(input);
        packages.set(name, (packages.get(name) ?? 0) + bytesInOutput);
      }
      built.set(fn.id, { file, bytes: out.bytes, metafile: result.metafile, packages });
    }
  }
  return built;
}

/**
 * Milliseconds to import a built bundle in a fresh `node` process with a minimal environment (PATH and a
 * region: what any Lambda has), measured inside that process around the `import()` (process start excluded).
 */
export function coldImportMs(file: string, env: Readonly<Record<string, string | undefined>>) {
  const script = `const t0 = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); process.stdout.write(String(performance.now() - t0));`;
  return new Promise<number>((done, fail) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: env.PATH, AWS_REGION: 'us-east-1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      err += b.toString();
    });
    child.on('error', fail);
    child.on('close', (code) => {
      const ms = Number(out);
      if (code === 0 && Number.isFinite(ms)) done(ms);
      else fail(new Error(`importing ${file} failed (exit ${code}): ${err.trim() || out.trim()}`));
    });
  });
}
