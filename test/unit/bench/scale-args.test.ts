import { describe, expect, it } from 'vitest';
import { growthExponent, parseScaleArgs } from '../../../bench/scale.js';

describe('bench --scale arguments', () => {
  it('reads --with as existing collections on the server, after the grown sizes', () => {
    const o = parseScaleArgs([
      '--sizes',
      '100000,20000',
      '--stores',
      'pgvector',
      '--with',
      'ai4rag_m1',
    ]);
    expect(o.sizes).toEqual([20000, 100000]);
    expect(o.with).toEqual(['ai4rag_m1']);
    expect(parseScaleArgs([]).with).toEqual([]);
  });

  it('refuses a --with name that is not a collection name, naming it, and --with without the server', () => {
    expect(() => parseScaleArgs(['--with', 'm1; DROP TABLE x'])).toThrow(
      '--with takes collection names starting with "ai4rag" ([A-Za-z0-9_]), got "m1; DROP TABLE x"',
    );
    expect(() => parseScaleArgs(['--stores', 'pglite', '--with', 'ai4rag_m1'])).toThrow(
      '--with needs the PostgreSQL server: add pgvector to --stores',
    );
  });

  it('fits the growth exponent on log–log (golden values)', () => {
    expect(
      growthExponent([
        { n: 1000, y: 2 },
        { n: 100000, y: 2 },
      ]),
    ).toBe(0);
    expect(
      growthExponent([
        { n: 10, y: 1 },
        { n: 1000, y: 100 },
      ]),
    ).toBeCloseTo(1, 12);
    expect(
      growthExponent([
        { n: 20000, y: 3.25 },
        { n: 100000, y: 6.5 },
        { n: 1000000, y: 13 },
      ]),
    ).toBeCloseTo(0.3507, 4);
  });
});
