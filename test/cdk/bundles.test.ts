/**
 * What the Lambda bundles contain, built in process by esbuild with the stack's own options
 * (`bundlingOptions`) for functions read from the synthesized template of each variant (bench/bundles.ts).
 * A few bundles only: each takes a second or two.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type BuiltBundle,
  buildBundle,
  buildBundles,
  type FunctionBundle,
  functionBundles,
  packageOf,
} from '../../bench/bundles.js';
import { bundlingOptions } from '../../lib/constructs/node-function.js';

/** The Milvus SDK and the gRPC / protobuf / parquet stack it brings. */
const MILVUS_STACK = [
  '@zilliz/milvus2-sdk-node',
  '@grpc/grpc-js',
  '@grpc/proto-loader',
  'protobufjs',
  '@shanghaikid/parquetjs',
  'thrift',
];
const PGLITE = ['@electric-sql/pglite', '@electric-sql/pglite-pgvector'];
/** 1.5 MB, the pgvector search bundle's budget. */
const SEARCH_BUDGET_BYTES = 1_500_000;

/** Packages whose code is in the bundle (at least one byte of output). */
const shipped = (bundle: BuiltBundle): string[] => [...bundle.packages.keys()];
/** Packages esbuild even read while bundling. */
const read = (bundle: BuiltBundle): string[] => [
  ...new Set(Object.keys(bundle.metafile.inputs).map(packageOf)),
];

function only(bundles: FunctionBundle[], id: string): FunctionBundle {
  const fn = bundles.find((b) => b.id === id);
  if (fn === undefined) throw new Error(`no ${id} in the template`);
  return fn;
}

describe('Lambda bundles', () => {
  let pgvector: FunctionBundle[];
  let zilliz: FunctionBundle[];
  beforeAll(() => {
    pgvector = functionBundles('pgvector');
    zilliz = functionBundles('zilliz');
  });

  it('gives every function the store of its variant (or none) and ships no source map', () => {
    // Prepare
    const stores = (bundles: FunctionBundle[]) =>
      new Set(bundles.map((b) => b.contents.vectorStore ?? 'none'));

    // Assess
    expect(stores(pgvector)).toEqual(new Set(['pgvector', 'none']));
    expect(stores(zilliz)).toEqual(new Set(['zilliz', 'none']));
    expect(bundlingOptions({ vectorStore: 'pgvector', remoteModels: true }).sourceMap).toBe(false);
  });

  it('keeps the pgvector search bundle within 1.5 MB, without PGlite or the Milvus SDK', async () => {
    // Prepare
    const search = only(pgvector, 'SearchFunction');

    // Act
    const bundle = await buildBundle(search);

    // Assess
    expect(search.contents).toEqual({ vectorStore: 'pgvector', remoteModels: true });
    expect(Object.keys(bundle.metafile.outputs).filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(bundle.bytes).toBeLessThanOrEqual(SEARCH_BUDGET_BYTES);
    // `import { z } from 'zod'` anywhere in the graph makes esbuild keep all of zod (every locale, ~450 KB):
    // import it as `import * as z from 'zod'`.
    expect(bundle.packages.get('zod') ?? 0).toBeLessThan(150_000);
    expect(shipped(bundle)).toEqual(expect.arrayContaining(['pg', 'openai']));
    expect(read(bundle).filter((p) => MILVUS_STACK.includes(p))).toEqual([]);
    expect(shipped(bundle).filter((p) => PGLITE.includes(p))).toEqual([]);
  });

  it('bundles the Milvus SDK in a Zilliz function, without PGlite or pg', async () => {
    // Prepare
    const search = only(zilliz, 'SearchFunction');

    // Act
    const bundle = await buildBundle(search);

    // Assess
    expect(search.contents).toEqual({ vectorStore: 'zilliz', remoteModels: true });
    expect(shipped(bundle)).toContain('@zilliz/milvus2-sdk-node');
    expect(shipped(bundle).filter((p) => [...PGLITE, 'pg', 'pg-pool'].includes(p))).toEqual([]);
  });

  it('leaves the OpenAI SDK out of a function that calls no model', async () => {
    // Prepare: a store function whose plan has no remote models.
    const modelless = pgvector.find(
      (b) => b.contents.remoteModels === false && b.contents.vectorStore !== undefined,
    );
    if (modelless === undefined) throw new Error('no store function without remote models');

    // Act
    const bundle = await buildBundle(modelless);

    // Assess
    expect(shipped(bundle)).toContain('pg');
    expect(shipped(bundle)).not.toContain('openai');
    expect(shipped(bundle).filter((p) => [...PGLITE, ...MILVUS_STACK].includes(p))).toEqual([]);
  });

  it('ships neither PGlite nor the Milvus stack in any pgvector bundle', async () => {
    // One build per distinct entry and contents (the stream function shares Generate's bundle).
    const distinct = new Map<string, FunctionBundle>();
    for (const b of pgvector) distinct.set(`${b.entry}|${JSON.stringify(b.contents)}`, b);
    expect(distinct.size).toBeGreaterThanOrEqual(12);
    const offending: string[] = [];
    const built = await buildBundles([...distinct.values()]);
    expect(built.size).toBe(distinct.size);
    for (const [id, bundle] of built) {
      for (const p of shipped(bundle)) {
        if ([...PGLITE, ...MILVUS_STACK].includes(p)) offending.push(`${id}: ${p}`);
      }
    }
    expect(offending).toEqual([]);
  }, 120_000);
});
