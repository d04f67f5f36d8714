import { describe, expect, it } from 'vitest';
import {
  compileFilterSql,
  FILTER_LIMITS,
  type FilterNode,
  MetadataFilterError,
  matchesMetadataFilter,
  parseMetadataFilter,
} from '../../../shared/src/vectorstores/filter.js';

describe('parseMetadataFilter', () => {
  it('parses shorthand equality, operators and logic into one AST', () => {
    // Act
    const ast = parseMetadataFilter({
      document_id: 'd1',
      'user.year': { gte: 2020, lt: 2024 },
      or: [{ 'user.lang': 'en' }, { not: { headings: { startsWith: 'Intro' } } }],
    });
    // Assess
    expect(ast).toEqual({
      op: 'and',
      children: [
        { op: 'eq', path: ['document_id'], value: 'd1' },
        { op: 'gte', path: ['user', 'year'], value: 2020 },
        { op: 'lt', path: ['user', 'year'], value: 2024 },
        {
          op: 'or',
          children: [
            { op: 'eq', path: ['user', 'lang'], value: 'en' },
            { op: 'not', child: { op: 'startsWith', path: ['headings'], value: 'Intro' } },
          ],
        },
      ],
    });
  });

  it('treats an empty top-level filter as no filter, unless one is required', () => {
    // Act / Assess
    expect(parseMetadataFilter({})).toBeUndefined();
    expect(() => parseMetadataFilter({}, { nonEmpty: true })).toThrow(/must not be empty/);
  });

  const deep = (n: number): unknown => (n === 0 ? { document_id: 'x' } : { not: deep(n - 1) });
  it.each([
    ['a non-object', 'x', /^filter: expected an object/],
    ['an array', [{ document_id: 'x' }], /^filter: expected an object/],
    [
      '__proto__',
      JSON.parse('{"__proto__": {"x": 1}}'),
      /filter\.__proto__: key "__proto__" is refused/,
    ],
    [
      'nested __proto__',
      JSON.parse('{"or": [{"__proto__": 1}]}'),
      /filter\.or\[0\]\.__proto__: key "__proto__" is refused/,
    ],
    ['constructor', { constructor: 1 }, /key "constructor" is refused/],
    ['user.prototype', { 'user.prototype': 1 }, /key "user\.prototype" is refused/],
    ['an unknown built-in', { lang: 'en' }, /filter\.lang: unknown field "lang"/],
    ['a bad user key', { 'user.a-b': 1 }, /unknown field "user\.a-b"/],
    [
      'an unknown operator',
      { 'user.n': { $gt: 1 } },
      /filter\.user\.n\.\$gt: unknown operator "\$gt"/,
    ],
    ['an empty operator object', { 'user.n': {} }, /filter\.user\.n: empty operator object/],
    [
      'a null value',
      { 'user.n': null },
      /filter\.user\.n: expected a string, a finite number or a boolean/,
    ],
    ['a NaN', { 'user.n': Number.NaN }, /expected a string, a finite number/],
    [
      'a boolean ordering',
      { 'user.n': { gt: true } },
      /filter\.user\.n\.gt: expected a number or a string/,
    ],
    [
      'in without an array',
      { 'user.n': { in: 1 } },
      /filter\.user\.n\.in: expected an array of 1\.\.1024 values/,
    ],
    ['an empty in', { 'user.n': { nin: [] } }, /expected an array/],
    [
      'a nested in value',
      { 'user.n': { in: [[1]] } },
      /filter\.user\.n\.in\[0\]: expected a string/,
    ],
    ['startsWith a number', { 'user.n': { startsWith: 1 } }, /expected a non-empty string/],
    ['an empty or', { or: [] }, /filter\.or: expected a non-empty array of filters/],
    ['an empty nested filter', { and: [{}] }, /filter\.and\[0\]: empty filter object/],
    ['too deep', deep(FILTER_LIMITS.depth + 1), /nested deeper than 8 levels/],
    ['too long a string', { 'user.s': 'x'.repeat(1025) }, /longer than 1024 characters/],
    [
      'too many clauses',
      { or: Array.from({ length: FILTER_LIMITS.nodes + 1 }, (_, i) => ({ 'user.n': i })) },
      /more than 256 clauses/,
    ],
  ])('refuses %s, naming where', (_name, filter, message) => {
    // Act / Assess
    expect(() => parseMetadataFilter(filter)).toThrow(MetadataFilterError);
    expect(() => parseMetadataFilter(filter)).toThrow(message);
  });
});

describe('compileFilterSql', () => {
  it('binds every value and path; no caller text reaches the SQL', () => {
    // Prepare
    const hostile = "x'); DROP TABLE t; --";
    const params: unknown[] = ['vec', 10];
    // Act
    const sql = compileFilterSql(
      parseMetadataFilter({
        'user.k': { ne: hostile, in: [1, 'a'], gt: 2, lte: 'm', startsWith: hostile },
      }) as FilterNode,
      params,
      'metadata',
    );
    // Assess
    expect(sql).toBe(
      "((NOT metadata @> $3::jsonb) AND metadata @> ANY($4::jsonb[]) AND (CASE WHEN jsonb_typeof(metadata #> $5::text[]) = 'number' THEN (metadata #> $5::text[])::numeric > $6::numeric ELSE false END) AND (CASE WHEN jsonb_typeof(metadata #> $7::text[]) = 'string' THEN (metadata #>> $7::text[]) COLLATE \"C\" <= $8::text COLLATE \"C\" ELSE false END) AND (CASE WHEN jsonb_typeof(metadata #> $9::text[]) = 'string' THEN starts_with(metadata #>> $9::text[], $10::text) ELSE false END))",
    );
    expect(sql).not.toContain(hostile);
    expect(params.slice(2)).toEqual([
      JSON.stringify({ user: { k: hostile } }),
      ['{"user":{"k":1}}', '{"user":{"k":"a"}}'],
      ['user', 'k'],
      2,
      ['user', 'k'],
      'm',
      ['user', 'k'],
      hostile,
    ]);
  });
});

describe('matchesMetadataFilter', () => {
  const meta = { document_id: 'd1', sequence_number: 3, user: { year: 2021, tag: 'b_c' } };
  it.each([
    [{ 'user.year': 2021 }, true],
    [{ 'user.year': '2021' }, false],
    [{ 'user.year': { gt: 2020, lte: 2021 } }, true],
    [{ 'user.year': { gt: '2020' } }, false],
    [{ 'user.tag': { startsWith: 'b_' } }, true],
    [{ 'user.missing': { ne: 1 } }, true],
    [{ 'user.missing': { nin: [1] } }, true],
    [{ 'user.missing': { in: [1] } }, false],
    [{ or: [{ document_id: 'd2' }, { sequence_number: { gte: 3 } }] }, true],
    [{ not: { document_id: 'd1' } }, false],
  ])('evaluates %j as %s', (filter, expected) => {
    // Act / Assess
    expect(matchesMetadataFilter(parseMetadataFilter(filter), meta)).toBe(expected);
  });
});
