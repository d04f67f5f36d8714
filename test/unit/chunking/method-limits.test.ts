import { describe, expect, it } from 'vitest';
import {
  CHUNKING_METHODS,
  type ChunkingOptions,
  ChunkingValidationError,
  resolveSemanticOptions,
  validateChunkingOptions,
} from '#shared/chunking/index.js';

function message(opts: unknown): string {
  try {
    validateChunkingOptions(opts as ChunkingOptions);
  } catch (error: unknown) {
    if (error instanceof ChunkingValidationError) return error.message;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(opts)} to be rejected`);
}

const SEMANTIC = { method: 'semantic', chunkSize: 512, chunkOverlap: 0 } as const;
const HIERARCHICAL = {
  method: 'hierarchical',
  chunkSize: 256,
  chunkOverlap: 32,
  parentChunkSize: 1024,
} as const;

describe('validateChunkingOptions for fixed, semantic and hierarchical', () => {
  it('lists all five methods and accepts each one’s parameters at their bounds', () => {
    // Prepare
    const ok: ChunkingOptions[] = [
      { method: 'fixed', chunkSize: 128, chunkOverlap: 63 },
      { method: 'fixed', chunkSize: 2048, chunkOverlap: 256 },
      SEMANTIC,
      {
        ...SEMANTIC,
        breakpoint: 'standard_deviation',
        breakpointAmount: 10,
        bufferSize: 10,
        minChunkSize: 256,
      },
      { ...SEMANTIC, breakpoint: 'gradient', breakpointAmount: 0, bufferSize: 0, minChunkSize: 0 },
      { ...SEMANTIC, breakpointAmount: 100 },
      HIERARCHICAL,
      { ...HIERARCHICAL, parentChunkSize: 257 },
      { ...HIERARCHICAL, parentChunkSize: 8192 },
    ];

    // Act / Assess
    expect(CHUNKING_METHODS).toEqual(['recursive', 'hybrid', 'fixed', 'semantic', 'hierarchical']);
    for (const opts of ok) expect(() => validateChunkingOptions(opts)).not.toThrow();
  });

  it('needs overlap 0 for semantic and checks fixed like recursive', () => {
    // Act / Assess
    expect(message({ ...SEMANTIC, chunkOverlap: 64 })).toBe(
      'Semantic chunking does not support overlap: chunkOverlap must be 0, got 64.',
    );
    expect(message({ method: 'fixed', chunkSize: 256, chunkOverlap: 128 })).toBe(
      'chunkSize 256 must be greater than 2 × chunkOverlap (256); lower the overlap to at most 127.',
    );
  });

  it('needs a parent chunk size in chunkSize+1..8192 for hierarchical', () => {
    // Act / Assess
    expect(message({ method: 'hierarchical', chunkSize: 256, chunkOverlap: 0 })).toBe(
      'Hierarchical chunking needs parentChunkSize, an integer in 257..8192 (tokens; greater than chunkSize 256).',
    );
    for (const bad of [256, 8193, 512.5, '1024']) {
      expect(message({ ...HIERARCHICAL, parentChunkSize: bad })).toBe(
        `parentChunkSize ${typeof bad === 'string' ? `'${bad}'` : bad} is invalid; it must be an integer in 257..8192 (tokens; greater than chunkSize 256).`,
      );
    }
  });

  it('names a bad semantic parameter and its range', () => {
    // Act / Assess
    expect(message({ ...SEMANTIC, breakpoint: 'interquartile' })).toBe(
      "breakpoint 'interquartile' is invalid; allowed: 'percentile', 'standard_deviation', 'gradient'.",
    );
    expect(message({ ...SEMANTIC, breakpointAmount: 101 })).toBe(
      "breakpointAmount 101 is invalid; for breakpoint 'percentile' it must be a number in 0..100 (a percentile).",
    );
    expect(message({ ...SEMANTIC, breakpoint: 'standard_deviation', breakpointAmount: 11 })).toBe(
      "breakpointAmount 11 is invalid; for breakpoint 'standard_deviation' it must be a number in 0..10 (standard deviations).",
    );
    expect(message({ ...SEMANTIC, breakpointAmount: Number.NaN })).toMatch(/^breakpointAmount NaN/);
    expect(message({ ...SEMANTIC, bufferSize: 11 })).toBe(
      'bufferSize 11 is invalid; it must be an integer in 0..10 (sentences on each side).',
    );
    expect(message({ ...SEMANTIC, bufferSize: 1.5 })).toMatch(/^bufferSize 1.5 is invalid/);
    expect(message({ ...SEMANTIC, minChunkSize: 257 })).toBe(
      'minChunkSize 257 is invalid; it must be an integer in 0..256 (tokens; at most half of chunkSize 512).',
    );
  });

  it('refuses parameters given for a method that does not use them, naming them', () => {
    // Act / Assess
    expect(message({ method: 'recursive', chunkSize: 512, chunkOverlap: 64, bufferSize: 1 })).toBe(
      'bufferSize 1 does not apply to recursive chunking; it takes only chunkSize and chunkOverlap.',
    );
    expect(message({ ...SEMANTIC, parentChunkSize: 2048 })).toBe(
      'parentChunkSize 2048 does not apply to semantic chunking; it takes breakpoint, breakpointAmount, bufferSize, minChunkSize.',
    );
    expect(message({ ...HIERARCHICAL, breakpoint: 'gradient', minChunkSize: 8 })).toBe(
      "breakpoint 'gradient', minChunkSize 8 do not apply to hierarchical chunking; it takes parentChunkSize.",
    );
  });

  it('fills the semantic defaults', () => {
    // Act / Assess
    expect(resolveSemanticOptions(SEMANTIC)).toEqual({
      chunkSize: 512,
      breakpoint: 'percentile',
      breakpointAmount: 95,
      bufferSize: 1,
      minChunkSize: 64,
    });
    expect(resolveSemanticOptions({ ...SEMANTIC, breakpoint: 'standard_deviation' })).toMatchObject(
      {
        breakpointAmount: 3,
      },
    );
    expect(resolveSemanticOptions({ ...SEMANTIC, breakpoint: 'gradient' })).toMatchObject({
      breakpointAmount: 95,
    });
  });
});
