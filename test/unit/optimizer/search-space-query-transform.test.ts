import { describe, expect, it } from 'vitest';
import {
  createSearchSpace,
  defaultSearchSpace,
  mergeSearchSpace,
  parseSearchSpaceOverrides,
  ruleChatTransformNeedsChatModel,
  ruleRm3NeedsKeywordLeg,
  SearchSpaceError,
} from '#shared/optimizer/search-space.js';

const REMOTE = { modelId: 'gpt-4o-mini' };
const LOCAL = { modelId: 'local/extractive-v1' };
const EM = { modelId: 'text-embedding-3-small', contextLength: 8191 };

describe('query_transform search-space rules', () => {
  it.each([
    [{ query_transform: 'rm3', search_mode: 'hybrid' }, true],
    [{ query_transform: 'rm3', search_mode: 'vector' }, false],
    [{ query_transform: 'rm3' }, false],
    [{ query_transform: 'none', search_mode: 'vector' }, true],
    [{ query_transform: 'hyde', search_mode: 'vector' }, true],
    [{ search_mode: 'vector' }, true],
  ])('rule 10: rm3 needs search_mode hybrid: %j → %s', (combo, ok) => {
    expect(ruleRm3NeedsKeywordLeg(combo)).toBe(ok);
  });

  it.each([
    [{ query_transform: 'multi_query', foundation_model: REMOTE }, true],
    [{ query_transform: 'hyde', foundation_model: 'gpt-4o' }, true],
    [{ query_transform: 'multi_query', foundation_model: LOCAL }, false],
    [{ query_transform: 'hyde', foundation_model: 'local' }, false],
    [{ query_transform: 'rm3', foundation_model: LOCAL }, true],
    [{ query_transform: 'none', foundation_model: LOCAL }, true],
    [{ query_transform: 'hyde' }, true],
  ])('rule 11: multi_query and hyde need a chat model endpoint: %j → %s', (combo, ok) => {
    expect(ruleChatTransformNeedsChatModel(combo)).toBe(ok);
  });

  it('keeps only the valid transforms per model and search mode in the grid', () => {
    // Prepare: per model pair the default grid is 72 (48 hybrid, 24 vector)
    const params = mergeSearchSpace(
      defaultSearchSpace({ foundationModels: [LOCAL, REMOTE], embeddingModels: [EM] }),
      parseSearchSpaceOverrides({ query_transform: ['none', 'multi_query', 'hyde', 'rm3'] }),
    );
    // Act
    const combos = createSearchSpace(params).combinations();
    // Assess: local: none 72 + rm3 48; remote: none, multi_query, hyde 72 each + rm3 48
    const count = (fm: string, t: string) =>
      combos.filter(
        (c) =>
          (c.foundation_model as { modelId: string }).modelId === fm && c.query_transform === t,
      ).length;
    expect(params.at(-1)).toEqual({
      name: 'query_transform',
      type: 'C',
      values: ['none', 'multi_query', 'hyde', 'rm3'],
    });
    expect(combos).toHaveLength(120 + 264);
    expect(['none', 'multi_query', 'hyde', 'rm3'].map((t) => count(LOCAL.modelId, t))).toEqual([
      72, 0, 0, 48,
    ]);
    expect(['none', 'multi_query', 'hyde', 'rm3'].map((t) => count(REMOTE.modelId, t))).toEqual([
      72, 72, 72, 48,
    ]);
    expect(combos.filter((c) => c.query_transform === 'rm3' && c.search_mode !== 'hybrid')).toEqual(
      [],
    );
  });

  it('rejects unknown transforms in an override file', () => {
    expect(() => parseSearchSpaceOverrides({ query_transform: ['none', 'rm4', 'none'] })).toThrow(
      new SearchSpaceError(
        "Invalid search space overrides: 'query_transform' value 'rm4' must be one of 'none', 'multi_query', 'hyde', 'rm3'; 'query_transform' lists 'none' twice.",
      ),
    );
  });
});
