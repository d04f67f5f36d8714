import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../../functions/_shared/runtime.js';
import { createGenerateHandler, streamAnswer } from '../../../functions/generate/handler.js';
import { GenerateResponse } from '../../../shared/src/api/schemas.js';
import { context, getTestEvent, LEAVE_KEY, startIndexedRuntime } from './helpers.js';

type Handler = (event: APIGatewayProxyEvent, ctx: typeof context) => Promise<APIGatewayProxyResult>;
const QUESTION = 'How many days of annual leave do employees get?';
const SENTENCE = 'Employees get 25 days of annual leave per calendar year.';

function withBody(body: unknown): APIGatewayProxyEvent {
  const event = getTestEvent<APIGatewayProxyEvent>('apigw-generate');
  event.body = JSON.stringify(body);
  return event;
}

describe('citations on the query API (local model)', () => {
  let rt: LocalRuntime;
  let generate: Handler;

  beforeAll(async () => {
    rt = await startIndexedRuntime('ai4rag-cite-');
    generate = createGenerateHandler(rt) as unknown as Handler;
  });
  afterAll(async () => {
    await rt.close();
  });

  it('returns the markers of /generate bound to the cited span of their reference document', async () => {
    // Act
    const out = await generate(withBody({ question: QUESTION, citations: true }), context);

    // Assess
    expect(out.statusCode).toBe(200);
    const body = GenerateResponse.parse(JSON.parse(out.body));
    expect(body.answer.startsWith(`${SENTENCE} [1]`)).toBe(true);
    expect(body.removed_citations).toBe(0);
    const [first] = body.citations ?? [];
    const source = body.reference_documents[0];
    expect(first).toMatchObject({ marker: 1, document_key: LEAVE_KEY });
    expect(first?.chunk_id).toBe(source?.chunk_ids[0]);
    expect(source?.text.slice(first?.start, first?.end)).toBe(SENTENCE);
  });

  it('answers without markers or citations unless asked', async () => {
    // Act
    const out = await generate(withBody({ question: QUESTION }), context);

    // Assess
    const body = GenerateResponse.parse(JSON.parse(out.body));
    expect(body.answer).not.toContain('[1]');
    expect(body).not.toHaveProperty('citations');
    expect(body).not.toHaveProperty('removed_citations');
  });

  it('puts the citations on the done event of /stream', async () => {
    // Prepare
    let text = '';
    const sink = { write: (chunk: string) => (text += chunk), end: () => undefined };

    // Act
    await streamAnswer(
      rt,
      { body: JSON.stringify({ question: QUESTION, citations: true }), isBase64Encoded: false },
      sink,
    );

    // Assess
    const frames = text.split('\n\n').filter((f) => f !== '');
    const done = frames.at(-1) ?? '';
    expect(done.split('\n')[0]).toBe('event: done');
    const data = JSON.parse(done.split('\n')[1]?.slice('data: '.length) ?? '{}');
    expect(data.citations[0]).toMatchObject({ marker: 1, document_key: LEAVE_KEY });
    expect(data.removed_citations).toBe(0);
    const tokens = frames
      .filter((f) => f.startsWith('event: token'))
      .map((f) => JSON.parse(f.split('\n')[1]?.slice('data: '.length) ?? '{}').text)
      .join('');
    expect(tokens.startsWith(`${SENTENCE} [1]`)).toBe(true);
  });
});
