import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // Browser tests need Chromium: `npm run test:e2e` (vitest.e2e.config.ts) runs them.
    exclude: [...configDefaults.exclude, 'test/e2e/**', 'test/reliability/**'],
    globalSetup: ['test/support/global-setup.ts'],
    // A timeout catches a hang, not a slow machine: a laptop running two suites at once (two cores,
    // load 20) takes minutes for what takes seconds alone. No test asserts on wall-clock speed.
    testTimeout: 120_000,
    hookTimeout: 240_000,
    // Each file gets its own database (a PGlite snapshot or a PostgreSQL template clone).
    pool: 'forks',
    maxWorkers: 2,
  },
});
