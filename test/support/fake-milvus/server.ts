/**
 * An in-process fake Milvus gRPC server for tests. It serves the SDK's own protobufjs JSON definitions, so the
 * real `MilvusClient` talks to it unchanged, and it implements the semantics the Milvus store relies on:
 * collections with schemas, upsert/insert (with a BM25 function over a text field), delete and query with a
 * filter-expression subset, count(*), dense brute-force search (COSINE, IP, L2 as squared distance like Milvus),
 * BM25 full-text search (Okapi BM25, k1 1.2, b 0.75, collection-wide statistics) and hybrid search fused with the
 * RRF or weighted ranker parameters the SDK sends. Weighted fusion normalizes each sub-request's scores as Milvus
 * does per metric before weighting: COSINE (1 + s) / 2, IP 0.5 + atan(s) / π, L2 1 − 2·atan(d) / π,
 * BM25 2·atan(s) / π. Like the real proxy, a write carrying a JSON value over 65,536 bytes is refused whole with
 * Milvus' status (code 1100, IllegalArgument, "the length (n) of json field (f) exceeds max length (65536): …").
 * Every other RPC answers UNIMPLEMENTED.
 */
import { createRequire } from 'node:module';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { compileExpr } from './expr.js';

const require = createRequire(import.meta.url);
const PROTO_DIR = '@zilliz/milvus2-sdk-node/dist/milvus/proto-json';
/** The SDK's protobufjs JSON (CommonJS modules exporting `default`). */
const protoJson = (name: string): protobuf.INamespace =>
  (require(`${PROTO_DIR}/${name}.js`) as { default: protobuf.INamespace }).default;

const LOADER_OPTIONS = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};
const BM25_K1 = 1.2;
/** Milvus' `quotaAndLimits.limits.maxQueryResultWindow` default. */
const QUERY_WINDOW = 16_384;
const BM25_B = 0.75;

// biome-ignore lint/suspicious/noExplicitAny: protobuf messages decoded as plain objects
type Msg = Record<string, any>;
type Row = Record<string, unknown>;
type Unary = (call: { request: Msg }, callback: grpc.sendUnaryData<Msg>) => void;

interface Field {
  name: string;
  data_type: string;
  is_primary_key: boolean;
  is_function_output: boolean;
  dim: number;
}

interface Collection {
  name: string;
  schema: Msg;
  fields: Field[];
  pk: string;
  properties: Msg[];
  /** field name → metric type of its index */
  metrics: Map<string, string>;
  indexes: Msg[];
  loaded: boolean;
  rows: Map<string, Row>;
  /** BM25 function: input text field → output sparse field. */
  bm25?: { input: string; output: string };
  tokens: Map<string, string[]>;
  df: Map<string, number>;
  totalTokens: number;
}

interface Ranked {
  id: string;
  score: number;
}

/** Milvus' standard analyzer, approximated: lower-cased alphanumeric words. */
export function fakeTokenize(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Milvus' `common.JSONMaxLength` default: the bytes one JSON field value may serialize to. */
export const FAKE_JSON_MAX_LENGTH = 65_536;

const ok = (): Msg => ({ error_code: 'Success', code: 0, reason: '' });

/**
 * The proxy's refusal of an over-long JSON value (merr.WrapErrParameterInvalid: code 1100, legacy error code
 * IllegalArgument, not retriable), e.g. "the length (189484) of json field (metadata) exceeds max length (65536):
 * invalid parameter[expected=valid length json string][actual=length exceeds max length]".
 */
const jsonTooLong = (field: string, length: number, dynamic: boolean): Msg => {
  const what = dynamic ? 'dynamic field' : `json field (${field})`;
  const expected = dynamic ? 'valid length dynamic field' : 'valid length json string';
  const reason = `the length (${length}) of ${what} exceeds max length (${FAKE_JSON_MAX_LENGTH}): invalid parameter[expected=${expected}][actual=length exceeds max length]`;
  return { error_code: 'IllegalArgument', code: 1100, reason, retriable: false, detail: reason };
};
const fail = (reason: string): Msg => ({ error_code: 'UnexpectedError', code: 1100, reason });

function kv(list: Msg[] | undefined): Map<string, string> {
  return new Map((list ?? []).map((p) => [String(p.key), String(p.value)]));
}

function decodeColumn(fd: Msg, n: number): unknown[] {
  const s = fd.scalars;
  if (s?.string_data) return s.string_data.data;
  if (s?.long_data) return s.long_data.data.map(Number);
  if (s?.int_data) return s.int_data.data;
  if (s?.double_data) return s.double_data.data;
  if (s?.float_data) return s.float_data.data;
  if (s?.bool_data) return s.bool_data.data;
  if (s?.json_data)
    return s.json_data.data.map((b: Buffer) => JSON.parse(Buffer.from(b).toString()));
  const v = fd.vectors;
  if (v?.float_vector) {
    const dim = Number(v.dim);
    const flat: number[] = v.float_vector.data;
    return Array.from({ length: n }, (_, i) => flat.slice(i * dim, (i + 1) * dim));
  }
  throw new Error(`unsupported field data for ${fd.field_name}`);
}

function encodeColumn(field: Field, values: unknown[]): Msg {
  const base = { field_name: field.name, type: field.data_type, field_id: '0', valid_data: [] };
  switch (field.data_type) {
    case 'VarChar':
    case 'String':
      return { ...base, scalars: { string_data: { data: values } } };
    case 'Int64':
    case 'Int32':
    case 'Int16':
    case 'Int8':
      return { ...base, scalars: { long_data: { data: values.map(String) } } };
    case 'Bool':
      return { ...base, scalars: { bool_data: { data: values } } };
    case 'Double':
    case 'Float':
      return { ...base, scalars: { double_data: { data: values } } };
    case 'JSON':
      return {
        ...base,
        scalars: { json_data: { data: values.map((v) => Buffer.from(JSON.stringify(v))) } },
      };
    case 'FloatVector':
      return {
        ...base,
        vectors: { dim: String(field.dim), float_vector: { data: (values as number[][]).flat() } },
      };
    default:
      throw new Error(`field ${field.name} of type ${field.data_type} cannot be output`);
  }
}

/** Primary-key order: numbers numerically, strings by UTF-8 bytes (as Milvus compares VarChar keys). */
function comparePk(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return Buffer.compare(Buffer.from(String(a)), Buffer.from(String(b)));
}

function denseScore(metric: string, a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let l2 = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
    l2 += (x - y) ** 2;
  }
  if (metric === 'L2') return l2;
  if (metric === 'IP') return dot;
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

function normalize(metric: string, s: number): number {
  switch (metric) {
    case 'COSINE':
      return (1 + s) / 2;
    case 'IP':
      return 0.5 + Math.atan(s) / Math.PI;
    case 'L2':
      return 1 - (2 * Math.atan(s)) / Math.PI;
    default:
      return (2 * Math.atan(s)) / Math.PI;
  }
}

const byScore = (ascending: boolean) => (a: Ranked, b: Ranked) =>
  (ascending ? a.score - b.score : b.score - a.score) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** A running fake server. */
export interface FakeMilvus {
  /** `http://127.0.0.1:<port>`, what `MilvusConfig.uri` takes. */
  uri: string;
  /** `127.0.0.1:<port>`. */
  address: string;
  close(): Promise<void>;
}

/**
 * Starts a fake Milvus on 127.0.0.1 (port 0 = any free port).
 * @example const fake = await startFakeMilvus(); ...; await fake.close();
 */
export async function startFakeMilvus(port = 0): Promise<FakeMilvus> {
  const definition = protoLoader.fromJSON(protoJson('milvus'), LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as Msg;
  const service = pkg.milvus.proto.milvus.MilvusService.service as grpc.ServiceDefinition;
  // The SDK encodes `schema` and `placeholder_group` with schema.base / milvus.base, whose JSON uses camelCase
  // field names; the wire format is the same, so decode with milvus.js, whose names match the gRPC messages.
  const messages = protobuf.Root.fromJSON(protoJson('milvus'));
  const schemaType = messages.lookupType('milvus.proto.schema.CollectionSchema');
  const placeholderType = messages.lookupType('milvus.proto.common.PlaceholderGroup');
  const collections = new Map<string, Collection>();

  const get = (name: string): Collection => {
    const c = collections.get(name);
    if (c === undefined) throw new Error(`collection not found[collection=${name}]`);
    return c;
  };

  const addStats = (c: Collection, id: string, sign: 1 | -1): void => {
    const toks = c.tokens.get(id);
    if (toks === undefined) return;
    c.totalTokens += sign * toks.length;
    for (const t of new Set(toks)) {
      const n = (c.df.get(t) ?? 0) + sign;
      if (n <= 0) c.df.delete(t);
      else c.df.set(t, n);
    }
    if (sign === -1) c.tokens.delete(id);
  };

  const remove = (c: Collection, id: string): void => {
    addStats(c, id, -1);
    c.rows.delete(id);
  };

  const write = (req: Msg): Msg => {
    const c = get(req.collection_name);
    const n = Number(req.num_rows);
    // As the proxy validates a request before any row of it is written: one over-long JSON value refuses all.
    for (const fd of req.fields_data as Msg[]) {
      for (const raw of (fd.scalars?.json_data?.data ?? []) as Uint8Array[]) {
        if (raw.length > FAKE_JSON_MAX_LENGTH) {
          return {
            status: jsonTooLong(fd.field_name, raw.length, fd.is_dynamic === true),
            IDs: {},
            insert_cnt: '0',
          };
        }
      }
    }
    const cols = (req.fields_data as Msg[]).map(
      (fd) => [fd.field_name as string, decodeColumn(fd, n)] as const,
    );
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const row: Row = {};
      for (const [name, values] of cols) row[name] = values[i];
      const id = String(row[c.pk]);
      remove(c, id);
      c.rows.set(id, row);
      if (c.bm25) {
        c.tokens.set(id, fakeTokenize(String(row[c.bm25.input] ?? '')));
        addStats(c, id, 1);
      }
      ids.push(id);
    }
    return {
      status: ok(),
      IDs: { str_id: { data: ids } },
      insert_cnt: String(n),
      upsert_cnt: String(n),
    };
  };

  const outputFields = (c: Collection, requested: string[]): Field[] => {
    const wanted =
      requested.length === 0 || requested.includes('*') ? c.fields.map((f) => f.name) : requested;
    return c.fields.filter(
      (f) => wanted.includes(f.name) && !f.is_function_output && f.name !== undefined,
    );
  };

  /** One sub-search: the ranked hits (raw metric values) and the metric used. */
  const searchOne = (
    c: Collection,
    req: Msg,
  ): { hits: Ranked[]; metric: string; limit: number } => {
    const params = kv(req.search_params);
    const field = params.get('anns_field') ?? '';
    const metric = c.metrics.get(field) ?? params.get('metric_type') ?? 'COSINE';
    const limit = Number(params.get('topk') ?? 10);
    const group = placeholderType.decode(req.placeholder_group as Uint8Array) as unknown as Msg;
    const raw = group.placeholders?.[0]?.values?.[0] as Uint8Array | undefined;
    if (raw === undefined) throw new Error('empty placeholder group');
    const pred = compileExpr(String(req.dsl ?? ''));
    const rows = [...c.rows.entries()].filter(([, row]) => pred(row));
    let hits: Ranked[];
    if (c.bm25 !== undefined && field === c.bm25.output) {
      const qtf = new Map<string, number>();
      for (const t of fakeTokenize(Buffer.from(raw).toString('utf8')))
        qtf.set(t, (qtf.get(t) ?? 0) + 1);
      const n = c.rows.size;
      const avgdl = n > 0 ? c.totalTokens / n : 1;
      hits = [];
      for (const [id] of rows) {
        const toks = c.tokens.get(id) ?? [];
        const tf = new Map<string, number>();
        for (const t of toks) tf.set(t, (tf.get(t) ?? 0) + 1);
        let score = 0;
        for (const [t, q] of qtf) {
          const f = tf.get(t);
          if (f === undefined) continue;
          const df = c.df.get(t) ?? 0;
          const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
          score +=
            q *
            idf *
            ((f * (BM25_K1 + 1)) / (f + BM25_K1 * (1 - BM25_B + (BM25_B * toks.length) / avgdl)));
        }
        if (score > 0) hits.push({ id, score });
      }
      hits.sort(byScore(false));
      return { hits: hits.slice(0, limit), metric: 'BM25', limit };
    }
    const buf = Buffer.from(raw);
    const q = Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4));
    hits = rows.map(([id, row]) => ({ id, score: denseScore(metric, q, row[field] as number[]) }));
    hits.sort(byScore(metric === 'L2'));
    return { hits: hits.slice(0, limit), metric, limit };
  };

  const searchResults = (c: Collection, hits: Ranked[], output: string[], topK: number): Msg => {
    const fields = outputFields(c, output);
    const rows = hits.map((h) => c.rows.get(h.id) as Row);
    return {
      status: ok(),
      collection_name: c.name,
      results: {
        num_queries: '1',
        top_k: String(topK),
        fields_data: fields.map((f) =>
          encodeColumn(
            f,
            rows.map((r) => r[f.name]),
          ),
        ),
        scores: hits.map((h) => h.score),
        ids: { str_id: { data: hits.map((h) => h.id) } },
        topks: [String(hits.length)],
        output_fields: fields.map((f) => f.name),
        primary_field_name: c.pk,
      },
    };
  };

  const handlers: Record<string, (req: Msg) => Msg> = {
    Connect: () => ({ status: ok(), server_info: { build_tags: 'fake' }, identifier: '1' }),
    GetVersion: () => ({ status: ok(), version: 'v2.6.0-fake' }),
    CheckHealth: () => ({ status: ok(), isHealthy: true }),
    HasCollection: (req) => ({ status: ok(), value: collections.has(req.collection_name) }),
    CreateCollection: (req) => {
      if (collections.has(req.collection_name))
        return fail(`collection ${req.collection_name} already exists`);
      const schema = schemaType.toObject(
        schemaType.decode(req.schema as Uint8Array),
        LOADER_OPTIONS,
      ) as Msg;
      const bm25Fn = (schema.functions as Msg[]).find((f) => f.type === 'BM25');
      const outputs = new Set(
        (schema.functions as Msg[]).flatMap((f) => f.output_field_names as string[]),
      );
      schema.fields = (schema.fields as Msg[]).map((f, i) => ({
        ...f,
        fieldID: String(100 + i),
        is_function_output: outputs.has(f.name),
      }));
      const fields: Field[] = schema.fields.map((f: Msg) => ({
        name: f.name,
        data_type: f.data_type,
        is_primary_key: f.is_primary_key,
        is_function_output: f.is_function_output,
        dim: Number(kv(f.type_params).get('dim') ?? 0),
      }));
      const pk = fields.find((f) => f.is_primary_key)?.name;
      if (pk === undefined) return fail('schema has no primary key');
      collections.set(req.collection_name, {
        name: req.collection_name,
        schema,
        fields,
        pk,
        properties: req.properties ?? [],
        metrics: new Map(),
        indexes: [],
        loaded: false,
        rows: new Map(),
        ...(bm25Fn
          ? { bm25: { input: bm25Fn.input_field_names[0], output: bm25Fn.output_field_names[0] } }
          : {}),
        tokens: new Map(),
        df: new Map(),
        totalTokens: 0,
      });
      return ok();
    },
    DescribeCollection: (req) => {
      const c = get(req.collection_name);
      return {
        status: ok(),
        schema: c.schema,
        collectionID: '1',
        collection_name: c.name,
        consistency_level: 'Bounded',
        properties: c.properties,
        shards_num: 1,
        num_partitions: '1',
      };
    },
    DropCollection: (req) => {
      collections.delete(req.collection_name);
      return ok();
    },
    LoadCollection: (req) => {
      get(req.collection_name).loaded = true;
      return ok();
    },
    ReleaseCollection: (req) => {
      get(req.collection_name).loaded = false;
      return ok();
    },
    GetLoadState: (req) => {
      const c = collections.get(req.collection_name);
      const state =
        c === undefined ? 'LoadStateNotExist' : c.loaded ? 'LoadStateLoaded' : 'LoadStateNotLoad';
      return { status: ok(), state };
    },
    GetLoadingProgress: () => ({ status: ok(), progress: '100', refresh_progress: '100' }),
    CreateIndex: (req) => {
      const c = get(req.collection_name);
      const params = kv(req.extra_params);
      const metric = params.get('metric_type');
      if (metric !== undefined) c.metrics.set(req.field_name, metric.toUpperCase());
      c.indexes.push({
        index_name: req.index_name || req.field_name,
        indexID: String(c.indexes.length + 1),
        params: req.extra_params,
        field_name: req.field_name,
        indexed_rows: '0',
        total_rows: '0',
        state: 'Finished',
      });
      return ok();
    },
    DescribeIndex: (req) => {
      const c = get(req.collection_name);
      const list = c.indexes.filter((i) => !req.field_name || i.field_name === req.field_name);
      return list.length > 0
        ? { status: ok(), index_descriptions: list }
        : { status: { ...fail('index not found'), error_code: 'IndexNotExist', code: 700 } };
    },
    GetIndexState: () => ({ status: ok(), state: 'Finished' }),
    Flush: () => ({ status: ok(), coll_segIDs: {}, flush_coll_segIDs: {}, coll_seal_times: {} }),
    Insert: write,
    Upsert: write,
    Delete: (req) => {
      const c = get(req.collection_name);
      const pred = compileExpr(String(req.expr ?? ''));
      const ids = [...c.rows.entries()].filter(([, row]) => pred(row)).map(([id]) => id);
      for (const id of ids) remove(c, id);
      return { status: ok(), IDs: { str_id: { data: ids } }, delete_cnt: String(ids.length) };
    },
    Query: (req) => {
      const c = get(req.collection_name);
      const pred = compileExpr(String(req.expr ?? ''));
      const params = kv(req.query_params);
      const rows = [...c.rows.values()].filter(pred);
      const output = req.output_fields as string[];
      if (output.includes('count(*)')) {
        return {
          status: ok(),
          collection_name: c.name,
          output_fields: ['count(*)'],
          fields_data: [
            {
              field_name: 'count(*)',
              type: 'Int64',
              scalars: { long_data: { data: [String(rows.length)] } },
            },
          ],
        };
      }
      const offset = Number(params.get('offset') ?? 0);
      const limited = params.has('limit');
      const limit = limited ? Number(params.get('limit')) : rows.length;
      // Milvus: an empty expression needs a limit, and offset + limit must fit the query result window.
      if (!limited && String(req.expr ?? '').trim() === '') {
        return { status: fail('empty expression should be used with limit') };
      }
      if (limited && (offset + limit < 1 || offset + limit > QUERY_WINDOW)) {
        return {
          status: fail(
            `invalid max query result window, (offset+limit) should be in range [1, ${QUERY_WINDOW}], but got ${offset + limit}`,
          ),
        };
      }
      // Milvus merges segment results by primary key, so rows come back in primary-key order (the SDK's query
      // iterator pages with `pk > last` on that order).
      rows.sort((a, b) => comparePk(a[c.pk], b[c.pk]));
      const page = rows.slice(offset, offset + limit);
      const fields = outputFields(c, output);
      if (!fields.some((f) => f.name === c.pk))
        fields.unshift(c.fields.find((f) => f.name === c.pk) as Field);
      return {
        status: ok(),
        collection_name: c.name,
        output_fields: fields.map((f) => f.name),
        primary_field_name: c.pk,
        fields_data: fields.map((f) =>
          encodeColumn(
            f,
            page.map((r) => r[f.name]),
          ),
        ),
      };
    },
    Search: (req) => {
      const c = get(req.collection_name);
      const { hits, limit } = searchOne(c, req);
      return searchResults(c, hits, req.output_fields, limit);
    },
    HybridSearch: (req) => {
      const c = get(req.collection_name);
      const rank = kv(req.rank_params);
      const strategy = (rank.get('strategy') ?? 'rrf').toLowerCase();
      const params = JSON.parse(rank.get('params') ?? '{}') as { k?: number; weights?: number[] };
      const limit = Number(rank.get('limit') ?? 10);
      const acc = new Map<string, number>();
      (req.requests as Msg[]).forEach((sub, i) => {
        const { hits, metric } = searchOne(c, sub);
        hits.forEach((h, rank0) => {
          const add =
            strategy === 'weighted'
              ? (params.weights?.[i] ?? 1) * normalize(metric, h.score)
              : 1 / ((params.k ?? 60) + rank0 + 1);
          acc.set(h.id, (acc.get(h.id) ?? 0) + add);
        });
      });
      const fused = [...acc.entries()].map(([id, score]) => ({ id, score })).sort(byScore(false));
      return searchResults(c, fused.slice(0, limit), req.output_fields, limit);
    },
  };

  const implementation: Record<string, Unary> = {};
  for (const method of Object.keys(service)) {
    const handler = handlers[method];
    implementation[method] = (call, callback) => {
      if (handler === undefined) {
        callback({
          code: grpc.status.UNIMPLEMENTED,
          details: `fake Milvus does not implement ${method}`,
        });
        return;
      }
      try {
        callback(null, handler(call.request));
      } catch (error: unknown) {
        const reason = error instanceof Error ? error.message : String(error);
        // Milvus reports request failures in the status message, not as gRPC errors.
        callback(null, { status: fail(reason), ...fail(reason) });
      }
    };
  }
  const server = new grpc.Server();
  server.addService(service, implementation as unknown as grpc.UntypedServiceImplementation);
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    );
  });
  const address = `127.0.0.1:${bound}`;
  return {
    uri: `http://${address}`,
    address,
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        setTimeout(() => server.forceShutdown(), 1000).unref();
      }),
  };
}
