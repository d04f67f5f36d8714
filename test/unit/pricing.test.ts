import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/src/errors.js';
import { addUsage, costOf, parsePriceTable } from '../../shared/src/pricing.js';

describe('pricing', () => {
  const table = parsePriceTable({
    'gpt-4o-mini': { input: 0.15, output: 0.6 },
    'text-embedding-3-small': { input: 0.02 },
  });

  it.each([
    ['gpt-4o-mini', { promptTokens: 2_000_000, completionTokens: 100_000 }, 0.36],
    ['text-embedding-3-small', { promptTokens: 1_500_000, completionTokens: 0 }, 0.03],
    ['local/extractive-v1', { promptTokens: 9_999, completionTokens: 999 }, 0],
    ['unknown-model', { promptTokens: 10, completionTokens: 10 }, undefined],
    ['gpt-4o-mini@azure', { promptTokens: 1_000_000, completionTokens: 1_000_000 }, 0.75],
  ] as const)('costs %s at %o as %s USD', (model, usage, expected) => {
    // Act / Assess
    expect(costOf(usage, model, table)).toBe(expected);
  });

  it('adds usages', () => {
    expect(
      addUsage(
        { promptTokens: 1, completionTokens: 2 },
        { promptTokens: 10, completionTokens: 20 },
      ),
    ).toEqual({ promptTokens: 11, completionTokens: 22 });
  });

  it('names what is wrong in a bad table and where it came from', () => {
    // Act
    const call = () => parsePriceTable({ 'gpt-4o': { input: -1 } }, 'prices.json');
    // Assess
    expect(call).toThrow(ValidationError);
    expect(call).toThrow(/^prices\.json: expected .*; gpt-4o\.input: /);
  });
});
