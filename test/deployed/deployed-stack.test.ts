/**
 * The deployed stack, as synthesized: for each configuration (pgvector default; pgvector with an
 * OpenAI-compatible endpoint and a serving pattern; Zilliz), every function is built from the template (its source
 * entry, its handler export, its environment with Refs/GetAtts resolved to local stand-ins) and wired only as the
 * template wires it (bucket notifications → queues → event source mappings; API methods → integrations; Function
 * URL; state machine → Tasks; IAM policies checked on every SDK call; VPC placement checked on every connection).
 * A document is uploaded, indexed, found, answered (JSON and streamed), then deleted and gone; the experiment state
 * machine runs to its leaderboard. Nothing is wired by hand here: a template that forgets a variable, a grant, a
 * route or a mapping fails.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthesize } from '../cdk/template.js';
import { type FakeMilvus, startFakeMilvus } from '../support/fake-milvus/server.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { clientOptions, probePgServer } from '../support/pg.js';
import { hasOpenssl, makeCertificates, trustAsSystemRoot } from './certs.js';
import type { TemplateJson } from './intrinsics.js';
import { LocalCloud } from './local-cloud.js';
import { type Relay, startRelay, startRelayOnFixedPort } from './relay.js';

const REPO = resolve(import.meta.dirname, '..', '..');
const EXAMPLES = join(REPO, 'examples', 'docs');
const server = await probePgServer();
const openssl = hasOpenssl();

const LEAVE = `# Leave policy

## Annual leave

Every employee receives 27 days of paid annual leave per calendar year. Requests go to the line manager two weeks
in advance.

## Parental leave

Parents receive 16 weeks of paid parental leave.
`;
const TRAVEL = `Travel and expenses

Economy class is the default for flights under six hours. Receipts must be submitted within 30 days.
`;

/** What the test needs from the database stand-in: the relay (the proxy's and instance's endpoint). */
interface Database {
  relay: Relay;
  untrust: () => void;
  close(): Promise<void>;
}

/** The RDS instance stand-in: a fresh `ai4rag` database owned by the master user, behind a TLS relay on :5432. */
async function startDatabase(): Promise<Database> {
  if (server === undefined) throw new Error('no PostgreSQL server');
  const admin = new pg.Client(clientOptions(server));
  await admin.connect();
  try {
    const role = await admin.query("SELECT 1 FROM pg_roles WHERE rolname = 'ai4rag_admin'");
    // RDS's master user: rds_superuser there; a superuser stands in for it.
    if (role.rowCount === 0) await admin.query('CREATE ROLE ai4rag_admin LOGIN SUPERUSER');
    await admin.query('DROP DATABASE IF EXISTS ai4rag WITH (FORCE)');
    await admin.query('CREATE DATABASE ai4rag OWNER ai4rag_admin');
  } finally {
    await admin.end();
  }
  let ca = '';
  const relay = await startRelayOnFixedPort(
    { port: 5432, target: { host: server.host, port: server.port }, admit: () => admitDatabase() },
    (host) => {
      const certs = makeCertificates(host);
      ca = certs.ca;
      return certs;
    },
  );
  const untrust = trustAsSystemRoot(ca);
  return {
    relay,
    untrust,
    async close() {
      untrust();
      await relay.close();
    },
  };
}

let cloud: LocalCloud | undefined;

/** Only a function placed in the VPC, in a security group the proxy admits, reaches the database. */
function admitDatabase(): string | undefined {
  const fn = cloud?.current;
  if (fn === undefined) return 'a connection from outside any function';
  if (!fn.inVpc) return `${fn.logicalId} is not in the VPC: the proxy is unreachable`;
  const admitted = cloud?.resolver.ofType('AWS::EC2::SecurityGroupIngress').some(([, r]) => {
    const p = r.Properties ?? {};
    const source = String(cloud?.resolver.resolve(p.SourceSecurityGroupId ?? ''));
    return (
      Number(p.FromPort) <= 5432 &&
      Number(p.ToPort) >= 5432 &&
      fn.securityGroups.includes(source) &&
      /Proxy/.test(String(p.GroupId?.['Fn::GetAtt']?.[0] ?? ''))
    );
  });
  return admitted ? undefined : `${fn.logicalId}'s security groups are not admitted by the proxy`;
}

/** Only a function outside the VPC, or in subnets routed to a NAT gateway, reaches the internet. */
function admitInternet(): string | undefined {
  const fn = cloud?.current;
  if (fn === undefined) return undefined;
  if (fn.inVpc && !fn.hasEgress)
    return `${fn.logicalId} is in isolated subnets: no route to the internet`;
  return undefined;
}

interface Scenario {
  name: string;
  /** Deploy context (the stand-in URLs are added once the servers run). */
  context: () => Record<string, unknown>;
  namedSecrets: Record<string, string>;
  /** The embedding model every collection must be indexed with. */
  embeddingModel: string;
  /** Checked after ingestion (e.g. the model server was called for embeddings). */
  afterIngest?: () => void;
}

/** Uploads, queries, streams, deletes; then runs the experiment state machine. Throws on the first broken step. */
async function runScenario(c: LocalCloud, s: Scenario): Promise<void> {
  const docs = c.bucket('DocumentsBucket');
  const artifacts = c.bucket('ArtifactsBucket');
  await c.deployCustomResources();
  // Upload as a user would; S3 notifies the ingest queue.
  await c.putObject(docs, 'policies/leave policy.md', LEAVE, 'text/markdown');
  await c.putObject(docs, 'policies/travel.txt', TRAVEL, 'text/plain');
  await c.settle();
  expect(c.denied).toEqual([]);
  for (const dlq of ['IngestDlq', 'ChunkDlq', 'EmbedDlq'])
    expect(c.queue(dlq).messages, dlq).toEqual([]);
  s.afterIngest?.();

  const post = (path: string, body: unknown) =>
    c.api({
      method: 'POST',
      path,
      signed: true,
      apiKey: c.apiKeyValue,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const get = (path: string, query?: Record<string, string>) =>
    c.api({ method: 'GET', path, signed: true, apiKey: c.apiKeyValue, ...(query && { query }) });

  const listed = await get('/documents');
  expect(listed.statusCode, listed.body).toBe(200);
  const ids = JSON.stringify(JSON.parse(listed.body));
  expect(ids).toContain('policies/leave policy.md');
  expect(ids).toContain('policies/travel.txt');

  const stats = await get('/stats');
  expect(stats.statusCode, stats.body).toBe(200);
  expect(stats.body).toContain(s.embeddingModel);

  const search = await post('/search', {
    query: 'How many days of annual leave do employees get?',
  });
  expect(search.statusCode, search.body).toBe(200);
  expect(search.function).toMatch(/^SearchFunction/);
  const hits = JSON.parse(search.body);
  expect(JSON.stringify(hits)).toContain('27 days');

  const answer = await post('/generate', {
    question: 'How many days of annual leave do employees get?',
  });
  expect(answer.statusCode, answer.body).toBe(200);
  const generated = JSON.parse(answer.body);
  expect(JSON.stringify(generated.reference_documents ?? generated)).toContain(
    'policies/leave policy.md',
  );

  const streamed = await c.functionUrl({
    method: 'POST',
    path: '/',
    signed: true,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ question: 'How long is parental leave?' }),
  });
  expect(streamed.statusCode, streamed.body).toBe(200);
  expect(streamed.headers['content-type']).toBe('text/event-stream');
  expect(streamed.body).toContain('event: sources');
  expect(streamed.body).toContain('event: done');

  // The scheduled index step, fired as the template's rule fires it: pgvector only (Milvus builds its own index).
  // Two documents are below the store's threshold, so it builds nothing and says so; what it builds when segments
  // call for it is tested in knowledge-base-index.test.ts.
  if (s.name.startsWith('pgvector')) {
    const fired = await c.runSchedule('IndexBuildSchedule');
    expect(fired.schedule).toBe('rate(1 hour)');
    expect(fired.results).toEqual([
      expect.objectContaining({
        collection: c.fn('IndexBuildFunction').environment.AI4RAG_COLLECTION,
        built: false,
        reason: expect.stringMatching(/^below threshold \(\d+ of 20000 rows\): exact scan$/),
      }),
    ]);
    expect(c.denied).toEqual([]);
  } else {
    await expect(c.runSchedule('IndexBuildSchedule')).rejects.toThrow(
      'expected one rule IndexBuildSchedule, found 0',
    );
  }

  // Removal: S3 notifies ObjectRemoved; the document and its chunks go.
  await c.deleteObject(docs, 'policies/leave policy.md');
  await c.settle();
  expect(c.denied).toEqual([]);
  const after = await post('/search', { query: 'How many days of annual leave do employees get?' });
  expect(after.statusCode, after.body).toBe(200);
  expect(after.body).not.toContain('27 days');
  const relisted = await get('/documents');
  expect(relisted.body).not.toContain('policies/leave policy.md');
  expect(relisted.body).toContain('policies/travel.txt');

  // The experiment state machine, from the same template.
  const subset = [
    'about/company-overview.md',
    'policies/travel-and-expenses.md',
    'people/remote-work.txt',
  ];
  for (const key of subset)
    await c.putObject(docs, `corpus/${key}`, readFileSync(join(EXAMPLES, key)));
  await c.settle();
  const benchmark = (
    JSON.parse(readFileSync(join(REPO, 'examples', 'benchmark.json'), 'utf8')) as {
      correct_answer_document_keys: string[];
    }[]
  )
    .filter((q) => q.correct_answer_document_keys.every((k) => subset.includes(k)))
    .slice(0, 4);
  expect(benchmark.length).toBeGreaterThan(1);
  await c.putObject(
    artifacts,
    'experiments/dep-1/input/benchmark.json',
    JSON.stringify(benchmark),
    'application/json',
  );
  const execution = await c.startExecution({
    experimentId: 'dep-1',
    documentsPrefix: 'corpus/',
    benchmarkKey: 'experiments/dep-1/input/benchmark.json',
    maxEvals: 2,
    seed: 7,
  });
  expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
  expect(c.denied).toEqual([]);
  const bucket = c.buckets.get(artifacts);
  const leaderboard = bucket?.objects.get('experiments/dep-1/leaderboard.json');
  expect(leaderboard, 'leaderboard.json').toBeDefined();
  const rows = JSON.parse(new TextDecoder().decode(leaderboard?.body)) as unknown[];
  expect(rows.length).toBeGreaterThan(0);
  expect(JSON.stringify(rows)).toContain(s.embeddingModel);
  expect(bucket?.objects.has('experiments/dep-1/pattern.json')).toBe(true);
}

function templateOf(context: Record<string, unknown>): TemplateJson {
  return structuredClone(synthesize(context).template.toJSON()) as TemplateJson;
}

const collection = () => `ai4rag_kb_${Date.now().toString(36)}`;

describe.skipIf(server === undefined || !openssl)(
  'the synthesized pgvector stack, run as deployed',
  () => {
    let db: Database;
    beforeAll(async () => {
      db = await startDatabase();
    });
    afterAll(async () => {
      cloud?.close();
      cloud = undefined;
      await db?.close();
    });

    it('indexes, finds, answers, streams and forgets a document, and runs an experiment (local models)', async () => {
      const context = { collection: collection() };
      cloud = new LocalCloud({
        template: templateOf(context),
        standIns: { databaseHost: db.relay.host, databasePort: '5432' },
      });
      await runScenario(cloud, {
        name: 'pgvector',
        context: () => context,
        namedSecrets: {},
        embeddingModel: 'local/feature-hash-v1-384',
      });
      expect(db.relay.refused).toEqual([]);
      cloud.close();
      cloud = undefined;
    }, 240_000);

    // The harness's own checks bite: a grant or a VPC placement taken out of a template copy breaks the flow.
    it('refuses an SDK call the role does not allow: the upload ends in the DLQ, the denial names the action', async () => {
      const template = templateOf({ collection: collection() });
      const ingestId = Object.keys(template.Resources).find((id) =>
        /^IngestFunction[0-9A-F]{8}$/.test(id),
      );
      const roleRef = template.Resources[ingestId ?? '']?.Properties?.Role as
        | { 'Fn::GetAtt': [string, string] }
        | undefined;
      const role = roleRef?.['Fn::GetAtt'][0] ?? 'missing';
      for (const r of Object.values(template.Resources)) {
        if (r.Type !== 'AWS::IAM::Policy' || !JSON.stringify(r.Properties?.Roles).includes(role))
          continue;
        const doc = r.Properties?.PolicyDocument as { Statement: { Action: string | string[] }[] };
        doc.Statement = doc.Statement.filter(
          (st) => ![st.Action].flat().some((a) => a.startsWith('s3:GetObject')),
        );
      }
      cloud = new LocalCloud({
        template,
        standIns: { databaseHost: db.relay.host, databasePort: '5432' },
      });
      await cloud.deployCustomResources();
      await cloud.putObject(
        cloud.bucket('DocumentsBucket'),
        'policies/travel.txt',
        TRAVEL,
        'text/plain',
      );
      await cloud.settle();
      expect(cloud.queue('IngestDlq').messages).toHaveLength(1);
      expect(cloud.denied.length).toBeGreaterThan(0);
      expect(cloud.denied[0]).toMatch(
        /^IngestFunction[0-9A-F]{8}: User: arn:aws:sts::0{12}:assumed-role\/IngestFunctionServiceRole[0-9A-F]{8}\/IngestFunction[0-9A-F]{8} is not authorized to perform: s3:GetObject on resource: arn:aws:s3:::ai4rag-/,
      );
      cloud.close();
      cloud = undefined;
    }, 120_000);

    it('refuses a database connection from a function outside the VPC', async () => {
      const template = templateOf({ collection: collection() });
      const search = Object.entries(template.Resources).find(([id]) =>
        /^SearchFunction[0-9A-F]{8}$/.test(id),
      )?.[1];
      delete search?.Properties?.VpcConfig;
      cloud = new LocalCloud({
        template,
        standIns: { databaseHost: db.relay.host, databasePort: '5432' },
      });
      await cloud.deployCustomResources();
      await cloud.putObject(
        cloud.bucket('DocumentsBucket'),
        'policies/travel.txt',
        TRAVEL,
        'text/plain',
      );
      await cloud.settle();
      const refusedBefore = db.relay.refused.length;
      const out = await cloud.api({
        method: 'POST',
        path: '/search',
        signed: true,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'economy class' }),
      });
      expect(out.statusCode).toBeGreaterThanOrEqual(500);
      expect(db.relay.refused.slice(refusedBefore)[0]).toMatch(
        /^SearchFunction[0-9A-F]{8} is not in the VPC/,
      );
      db.relay.refused.splice(0);
      cloud.close();
      cloud = undefined;
    }, 120_000);
  },
);

describe.skipIf(server === undefined || !openssl)(
  'the synthesized pgvector stack with a model endpoint and a serving pattern',
  () => {
    let db: Database;
    let fake: FakeOpenAI;
    let relay: Relay;
    let patternFile: string;
    beforeAll(async () => {
      db = await startDatabase();
      fake = await startFakeOpenAI({ dimension: 64 });
      const target = new URL(fake.baseURL);
      relay = await startRelay({
        host: '127.0.0.1',
        port: 0,
        target: { host: target.hostname, port: Number(target.port) },
        admit: admitInternet,
      });
      const dir = mkdtempSync(join(tmpdir(), 'ai4rag-pattern-'));
      patternFile = join(dir, 'pattern.json');
      writeFileSync(patternFile, JSON.stringify(PATTERN));
    });
    afterAll(async () => {
      cloud?.close();
      cloud = undefined;
      await relay?.close();
      await fake?.close();
      await db?.close();
    });

    const contextOf = () => ({
      collection: collection(),
      openaiBaseUrl: `http://127.0.0.1:${relay.port}/v1`,
      openaiApiKeySecretName: 'ai4rag/openai',
      servingPattern: patternFile,
    });

    it('every function agrees on the pattern’s embedding model: indexed with it, found, answered, forgotten', async () => {
      const context = contextOf();
      cloud = new LocalCloud({
        template: templateOf(context),
        standIns: { databaseHost: db.relay.host, databasePort: '5432' },
        namedSecrets: { 'ai4rag/openai': 'sk-local-test' },
      });
      await runScenario(cloud, {
        name: 'pgvector+openai',
        context: () => context,
        namedSecrets: {},
        embeddingModel: 'text-embedding-3-small',
        afterIngest: () => {
          expect(fake.requests.some((r) => r.path.endsWith('/embeddings'))).toBe(true);
        },
      });
      expect(relay.refused).toEqual([]);
      expect(db.relay.refused).toEqual([]);
      cloud.close();
      cloud = undefined;
    }, 240_000);

    it('fails when one function’s environment lacks the embedding model (a template copy with it removed)', async () => {
      const context = contextOf();
      const template = templateOf(context);
      const ingest = Object.entries(template.Resources).find(([id]) =>
        /^IngestFunction[0-9A-F]{8}$/.test(id),
      )?.[1];
      const variables = ingest?.Properties?.Environment?.Variables as Record<string, unknown>;
      expect(variables.AI4RAG_EMBEDDING_MODEL).toBeDefined();
      delete variables.AI4RAG_EMBEDDING_MODEL;
      delete variables.AI4RAG_SERVING_PATTERN;
      cloud = new LocalCloud({
        template,
        standIns: { databaseHost: db.relay.host, databasePort: '5432' },
        namedSecrets: { 'ai4rag/openai': 'sk-local-test' },
      });
      // The collection is then created with the local model, and the check that it was indexed with the configured
      // one fails (before any query can mask it).
      await expect(
        runScenario(cloud, {
          name: 'broken',
          context: () => context,
          namedSecrets: {},
          embeddingModel: 'text-embedding-3-small',
        }),
      ).rejects.toThrow(/text-embedding-3-small/);
      cloud.close();
      cloud = undefined;
    }, 240_000);
  },
);

describe.skipIf(!openssl)('the synthesized Zilliz stack, run as deployed', () => {
  let milvus: FakeMilvus;
  let relay: Relay;
  let untrust: () => void;
  beforeAll(async () => {
    milvus = await startFakeMilvus();
    const [host, port] = milvus.address.split(':') as [string, string];
    // Zilliz Cloud answers gRPC over TLS: the relay terminates it with a certificate the test trusts as a root.
    const certs = makeCertificates('127.0.0.1');
    untrust = trustAsSystemRoot(certs.ca);
    relay = await startRelay({
      host: '127.0.0.1',
      port: 0,
      target: { host, port: Number(port) },
      admit: admitInternet,
      tls: { key: certs.key, cert: certs.cert, alpn: ['h2'] },
    });
  });
  afterAll(async () => {
    cloud?.close();
    cloud = undefined;
    untrust?.();
    await relay?.close();
    await milvus?.close();
  });

  it('indexes, finds, answers, streams and forgets a document, and runs an experiment', async () => {
    const context = {
      collection: collection(),
      vectorStore: 'zilliz',
      zillizUri: `https://127.0.0.1:${relay.port}`,
      zillizTokenSecretName: 'ai4rag/zilliz',
    };
    cloud = new LocalCloud({
      template: templateOf(context),
      namedSecrets: { 'ai4rag/zilliz': 'local-token' },
    });
    await runScenario(cloud, {
      name: 'zilliz',
      context: () => context,
      namedSecrets: {},
      embeddingModel: 'local/feature-hash-v1-384',
    });
    expect(relay.refused).toEqual([]);
    cloud.close();
    cloud = undefined;
  }, 240_000);
});

const PATTERN = {
  name: 'Pattern1',
  max_combinations: 4,
  evaluation: { metrics: [] },
  duration_seconds: 10,
  iteration: 1,
  settings: {
    vector_store_binding: { provider_type: 'pgvector', collection_name: 'ai4rag_p1' },
    chunking: { method: 'recursive', chunk_size: 256, chunk_overlap: 32, include_metadata: true },
    embedding: {
      model_id: 'text-embedding-3-small',
      embedding_params: { embedding_dimension: 64, context_length: 8191 },
    },
    retrieval: {
      method: 'simple',
      number_of_chunks: 5,
      search_mode: 'hybrid',
      ranker_strategy: 'rrf',
      ranker_k: 60,
    },
    generation: {
      model_id: 'gpt-4o-mini',
      temperature: 0.1,
      max_completion_tokens: 256,
      context_template_text: '{document}',
      user_message_text: 'Context: {reference_documents}\nQuestion: {question}',
      system_message_text: 'Answer from the context only.',
      language: { code: 'en', name: 'English' },
    },
  },
};
