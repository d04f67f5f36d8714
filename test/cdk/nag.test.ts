import { App, Stack, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { createAi4ragApp } from '../../lib/app.js';

const VARIANTS: [string, Record<string, unknown>][] = [
  ['pgvector', { vectorStore: 'pgvector' }],
  ['zilliz', { vectorStore: 'zilliz', zillizUri: 'https://example.zillizcloud.com' }],
  [
    'pgvector + OpenAI + API keys, deletable',
    {
      vectorStore: 'pgvector',
      openaiBaseUrl: 'https://models.example.com/v1',
      embeddingModel: 'text-embedding-3-small',
      foundationModel: 'gpt-4o-mini',
      apiAuth: 'apiKey',
      dbDeletionProtection: 'false',
      dbMultiAz: 'true',
      autoDeleteBuckets: 'true',
      alarmEmail: 'ops@example.com',
    },
  ],
  [
    'pgvector + a reranker with a key',
    {
      vectorStore: 'pgvector',
      rerankBaseUrl: 'https://tei.example.com',
      rerankModel: 'BAAI/bge-reranker-base',
      rerankApiKeySecretName: 'ai4rag/tei-key',
    },
  ],
  [
    'pgvector + per-role endpoints with keys',
    {
      vectorStore: 'pgvector',
      embeddingBaseUrl: 'https://tei.example.com/v1',
      embeddingApiKeySecretName: 'ai4rag/tei-embed-key',
      embeddingModel: 'BAAI/bge-small-en-v1.5',
      chatBaseUrl: 'https://vllm.example.com/v1',
      chatApiKeySecretName: 'ai4rag/vllm-key',
      foundationModel: 'meta-llama/Llama-3.1-8B-Instruct',
    },
  ],
  [
    'zilliz + OpenAI',
    {
      vectorStore: 'zilliz',
      zillizUri: 'https://example.zillizcloud.com',
      openaiBaseUrl: 'https://models.example.com/v1',
      embeddingModel: 'text-embedding-3-small',
      foundationModel: 'gpt-4o-mini',
    },
  ],
];

describe('cdk-nag AwsSolutions', () => {
  it.each(VARIANTS)('reports no unacknowledged finding for %s', (_name, context) => {
    // Prepare
    const { app, nag } = createAi4ragApp({ context, skipBundling: true });

    // Act
    const report = nag!.validateScope(app);

    // Assess
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
    expect(report.success).toBe(true);
    expect(() => app.synth()).not.toThrow();
  });

  it('fails synth on an unacknowledged finding (the gate is live)', () => {
    // Prepare: a queue without a DLQ breaks AwsSolutions-SQS3.
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Probe');
    new sqs.Queue(stack, 'NoDlq', { enforceSSL: true });
    const nag = new AwsSolutionsChecks(app);
    Validations.of(app).addPlugins(nag);

    // Act
    const report = nag.validateScope(app);

    // Assess
    expect(report.violations.map((v) => v.ruleName)).toContain('AwsSolutions-SQS3');
    expect(() => app.synth()).toThrow(/AwsSolutions-SQS3/);
  });
});
