import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two cores: PGlite instances are memory-heavy, keep parallelism modest.
    maxWorkers: 2,
    coverage: { include: ['shared/src/**'], reporter: ['text-summary'] },
  },
});
