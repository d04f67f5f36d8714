import { describe, expect, it } from 'vitest';
import { formatBytes } from '../../../web/src/format.js';

describe('web formatBytes (the knowledge base page’s size on disk)', () => {
  it.each([
    [0, '0 bytes'],
    [1023, '1023 bytes'],
    [1024, '1.0 KiB'],
    [1536, '1.5 KiB'],
    [2_869_239_808, '2.7 GiB'],
    [17_969_995_776, '16.7 GiB'],
    [5 * 1024 ** 5, '5120.0 TiB'],
  ])('%d bytes read %s', (bytes, shown) => {
    expect(formatBytes(bytes)).toBe(shown);
  });

  it.each([[null], [undefined], [Number.NaN], [-1]])('shows %s as unknown', (bytes) => {
    expect(formatBytes(bytes)).toBe('–');
  });
});
