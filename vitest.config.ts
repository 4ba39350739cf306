import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // Browser tests need Chromium: `npm run test:e2e` (vitest.e2e.config.ts) runs them.
    exclude: [...configDefaults.exclude, 'test/e2e/**', 'test/reliability/**'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own database (a PGlite snapshot or a PostgreSQL template clone).
    pool: 'forks',
    maxWorkers: 2,
  },
});
