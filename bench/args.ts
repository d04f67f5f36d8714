/**
 * Command-line flags shared by the bench sections: an integer within bounds and the list of stores, each refused
 * with an error that names the flag and what was typed.
 */

/** The two stores a bench section can run on. */
export type BenchStore = 'pglite' | 'pgvector';

/** The word after `flag` in `argv`, or undefined when the flag is absent. */
export function flagValue(argv: readonly string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i >= 0 ? argv[i + 1] : undefined;
}

/**
 * The integer after `flag` (`fallback` when absent).
 * @throws {Error} when it is not an integer from `min` to `max`, naming the flag and the value typed.
 */
export function intFlag(
  argv: readonly string[],
  flag: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = flagValue(argv, flag);
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${flag} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return n;
}

/**
 * `--stores` as a list (default both).
 * @throws {Error} naming the first entry that is neither pglite nor pgvector.
 */
export function storesFlag(argv: readonly string[]): BenchStore[] {
  const stores = (flagValue(argv, '--stores') ?? 'pglite,pgvector').split(',').map((s) => s.trim());
  for (const s of stores) {
    if (s !== 'pglite' && s !== 'pgvector')
      throw new Error(`--stores takes pglite and/or pgvector, got "${s}"`);
  }
  return stores as BenchStore[];
}
