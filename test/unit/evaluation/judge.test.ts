import { describe, expect, it } from 'vitest';
import {
  judgeAnswerRelevance,
  judgePrompt,
  parseJudgeScore,
} from '../../../shared/src/evaluation/judge.js';
import type { ChatMessage, FoundationModel } from '../../../shared/src/generation/types.js';

function scriptedJudge(replies: (string | Error)[]): FoundationModel & { prompts: string[] } {
  const prompts: string[] = [];
  let i = 0;
  return {
    modelId: 'judge',
    prompts,
    async chat(messages: ChatMessage[]) {
      prompts.push(messages[0]?.content ?? '');
      const reply = replies[i++ % replies.length] as string | Error;
      if (reply instanceof Error) throw reply;
      return { content: reply };
    },
    async *chatStream() {
      yield '';
    },
  };
}

describe('parseJudgeScore', () => {
  it.each([
    ['{"score": 4, "rationale": "ok"}', 4],
    ["```json\n{'score': 5, 'rationale': 'fine'}\n```", 5],
    ['Sure! Here is my rating: {"score": 2, "rationale": "off topic"} Hope it helps.', 2],
    ['score: 3', 3],
    ['4', 4],
    ['{"score": 7}', null],
    ['{"score": 0}', null],
    ['{"score": 3.5}', null],
    ['I cannot rate this.', null],
  ])('reads %j as %j', (reply, expected) => {
    // Act / Assess
    expect(parseJudgeScore(reply)).toBe(expected);
  });
});

describe('judgeAnswerRelevance', () => {
  it('maps 1..5 to (s - 1) / 4 and averages the valid rows only', async () => {
    // Prepare
    const judge = scriptedJudge(['{"score": 5}', '{"score": 1}', 'garbage', new Error('429')]);
    const items = ['a', 'b', 'c', 'd'].map((q) => ({ question: `q ${q}`, answer: `answer ${q}` }));

    // Act
    const result = await judgeAnswerRelevance(judge, items, { concurrency: 1 });

    // Assess
    expect(result.values).toEqual([1, 0, null, null]);
    expect(result.scores.mean).toBe(0.5);
    expect(result.scores.ci_low).not.toBeNull();
    expect(result.scores.ci_low as number).toBeLessThanOrEqual(0.5);
    expect(result.scores.ci_high as number).toBeGreaterThanOrEqual(0.5);
  });

  it('reports no CI with fewer than two valid rows, and null with none', async () => {
    // Act
    const one = await judgeAnswerRelevance(scriptedJudge(['{"score": 4}', 'x']), [
      { question: 'q', answer: 'a' },
      { question: 'r', answer: 'b' },
    ]);
    const none = await judgeAnswerRelevance(scriptedJudge(['x']), [{ question: 'q', answer: 'a' }]);

    // Assess
    expect(one.scores).toEqual({ mean: 0.75, ci_low: null, ci_high: null });
    expect(none.scores).toEqual({ mean: null, ci_low: null, ci_high: null });
  });

  it('shows the judge the question and the response, not contexts or references', () => {
    // Act
    const prompt = judgePrompt('How many leave days?', '25 days.');

    // Assess
    expect(prompt).toContain('Question: How many leave days?');
    expect(prompt).toContain('## Response to evaluate\n25 days.');
    expect(prompt).toContain('"score": <integer 1-5>');
  });
});
