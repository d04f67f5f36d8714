/** A uniform random source on [0, 1). */
export type UniformRandom = () => number;

/**
 * mulberry32: a tiny, fast 32-bit seeded PRNG, good enough for resampling and reproducible sampling (not for
 * cryptography). Fully deterministic for a seed.
 * @example const r = mulberry32(42); r(); // same first value on every run
 */
export function mulberry32(seed: number): UniformRandom {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
