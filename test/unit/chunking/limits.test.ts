import { describe, expect, it } from 'vitest';
import {
  approxTokens,
  CHARS_PER_TOKEN,
  CHUNKING_LIMITS,
  type ChunkingOptions,
  ChunkingValidationError,
  validateChunkingOptions,
} from '#shared/chunking/index.js';
import { ValidationError } from '#shared/errors.js';

function invalid(opts: unknown): ChunkingValidationError {
  try {
    validateChunkingOptions(opts as ChunkingOptions);
  } catch (error: unknown) {
    if (error instanceof ChunkingValidationError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(opts)} to be rejected`);
}

describe('approxTokens', () => {
  it('counts ceil(chars / 4)', () => {
    // Act / Assess
    expect(CHARS_PER_TOKEN).toBe(4);
    expect([0, 1, 4, 5, 8, 9].map((n) => approxTokens('x'.repeat(n)))).toEqual([0, 1, 1, 2, 2, 3]);
  });
});

describe('validateChunkingOptions', () => {
  it('exposes ai4rag constraint constants', () => {
    // Assess
    expect(CHUNKING_LIMITS).toEqual({
      MIN_CHUNK_SIZE: 128,
      MAX_CHUNK_SIZE: 2048,
      MIN_CHUNK_OVERLAP: 0,
      MAX_CHUNK_OVERLAP: 256,
    });
  });

  it('accepts the default grid points and the bounds', () => {
    // Prepare
    const ok: ChunkingOptions[] = [
      { method: 'recursive', chunkSize: 512, chunkOverlap: 128 },
      { method: 'recursive', chunkSize: 2048, chunkOverlap: 256 },
      { method: 'recursive', chunkSize: 128, chunkOverlap: 0 },
      { method: 'recursive', chunkSize: 513, chunkOverlap: 256 },
      { method: 'hybrid', chunkSize: 1024, chunkOverlap: 0 },
    ];

    // Act / Assess
    for (const opts of ok) expect(() => validateChunkingOptions(opts)).not.toThrow();
  });

  it('rejects a chunk size outside 128..2048 and names the range', () => {
    // Act
    const tooSmall = invalid({ method: 'recursive', chunkSize: 127, chunkOverlap: 0 });
    const tooLarge = invalid({ method: 'recursive', chunkSize: 2049, chunkOverlap: 0 });

    // Assess
    expect(tooSmall).toBeInstanceOf(ValidationError);
    expect(tooSmall.name).toBe('ChunkingValidationError');
    expect(tooSmall.message).toBe(
      'chunkSize 127 is invalid; it must be an integer in 128..2048 (tokens).',
    );
    expect(tooLarge.message).toContain('chunkSize 2049');
  });

  it('rejects a non-integer chunk size', () => {
    // Act / Assess
    expect(invalid({ method: 'recursive', chunkSize: 512.5, chunkOverlap: 0 }).message).toContain(
      'chunkSize 512.5',
    );
    expect(invalid({ method: 'recursive', chunkSize: '512', chunkOverlap: 0 }).message).toContain(
      "chunkSize '512'",
    );
    expect(
      invalid({ method: 'recursive', chunkSize: Number.NaN, chunkOverlap: 0 }).message,
    ).toContain('chunkSize NaN');
  });

  it('rejects an overlap outside 0..256 or not an integer', () => {
    // Act / Assess
    expect(invalid({ method: 'recursive', chunkSize: 1024, chunkOverlap: 257 }).message).toBe(
      'chunkOverlap 257 is invalid; it must be an integer in 0..256 (tokens).',
    );
    expect(invalid({ method: 'recursive', chunkSize: 1024, chunkOverlap: -1 }).message).toContain(
      'chunkOverlap -1',
    );
    expect(invalid({ method: 'recursive', chunkSize: 1024, chunkOverlap: 0.5 }).message).toContain(
      'chunkOverlap 0.5',
    );
  });

  it('rejects an overlap larger than half the chunk size', () => {
    // Act
    const error = invalid({ method: 'recursive', chunkSize: 256, chunkOverlap: 128 });

    // Assess
    expect(error.message).toBe(
      'chunkSize 256 must be greater than 2 × chunkOverlap (256); lower the overlap to at most 127.',
    );
  });

  it('rejects hybrid chunking with an overlap', () => {
    // Act
    const error = invalid({ method: 'hybrid', chunkSize: 512, chunkOverlap: 128 });

    // Assess
    expect(error.message).toBe(
      'Hybrid chunking does not support overlap: chunkOverlap must be 0, got 128.',
    );
  });

  it('rejects an unknown method and lists the allowed ones', () => {
    // Act
    const error = invalid({ method: 'llm', chunkSize: 512, chunkOverlap: 0 });

    // Assess
    expect(error.message).toBe(
      "Unknown chunking method 'llm'; allowed: 'recursive', 'hybrid', 'fixed', 'semantic', 'hierarchical'.",
    );
  });

  it('rejects options that are not an object', () => {
    // Act / Assess
    expect(invalid(null).message).toBe('Chunking options must be an object, got null.');
  });
});
