import { defineConfig } from 'vitest/config';

// Reliability tests (`npm run test:crash`): the API, the provider sandbox and the CLI as real
// processes on a PostgreSQL database of their own (TEST_DATABASE_URL, required), the API killed
// and restarted under load. Minutes, not seconds, so the default config (`npm test`) leaves
// test/reliability/ out; CI runs it after the PostgreSQL pass.
export default defineConfig({
  test: {
    include: ['test/reliability/**/*.test.ts'],
    // The scenario runs in beforeAll: its own budget (CRASH_BUDGET_S, 240 s) plus setup and the recovery run.
    testTimeout: 60_000,
    hookTimeout: 480_000,
    pool: 'forks',
    // One at a time: the crash test already runs several processes on two cores.
    maxWorkers: 1,
  },
});
