import { defineConfig } from 'vitest/config';

// The API fuzz suite (`npm run test:fuzz`): property-based hostile requests over every mutating
// operation of /openapi.json (test/fuzz/). FUZZ_RUNS sizes it (default 1000, a minute or two);
// CI runs it bigger on PostgreSQL (TEST_DATABASE_URL). Not part of `npm test`.
export default defineConfig({
  test: {
    include: ['test/fuzz/**/*.fuzz.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // The run stops itself after FUZZ_TIME_LIMIT_S (900 s by default); this is the backstop.
    testTimeout: 20 * 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
