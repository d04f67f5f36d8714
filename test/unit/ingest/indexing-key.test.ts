import { describe, expect, it } from 'vitest';
import { indexingKey } from '#shared/ingest/pipeline.js';

describe('indexingKey', () => {
  it('keeps the keys of the earlier methods and adds the parameters of the new ones', () => {
    // Act / Assess: a change of any parameter re-indexes the document; defaults are spelled out.
    expect(indexingKey({ method: 'recursive', chunkSize: 512, chunkOverlap: 64 })).toBe(
      'recursive:512:64',
    );
    expect(indexingKey({ method: 'fixed', chunkSize: 256, chunkOverlap: 32 })).toBe('fixed:256:32');
    expect(
      indexingKey({
        method: 'hierarchical',
        chunkSize: 128,
        chunkOverlap: 0,
        parentChunkSize: 1024,
      }),
    ).toBe('hierarchical:128:0:parent1024');
    expect(indexingKey({ method: 'semantic', chunkSize: 512, chunkOverlap: 0 })).toBe(
      'semantic:512:0:percentile95:buffer1:min64',
    );
    expect(
      indexingKey({
        method: 'semantic',
        chunkSize: 512,
        chunkOverlap: 0,
        breakpoint: 'gradient',
        breakpointAmount: 90,
        bufferSize: 2,
        minChunkSize: 0,
      }),
    ).toBe('semantic:512:0:gradient90:buffer2:min0');
  });
});
