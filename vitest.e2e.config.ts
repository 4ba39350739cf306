import { defineConfig } from 'vitest/config';

// Browser tests (`npm run test:e2e`): headless Chromium driven by playwright-core, against the
// real server booted as in the integration tests. They need a Chromium binary (CHROMIUM_PATH,
// default /usr/bin/chromium), so the default config (`npm test`) leaves test/e2e/ out.
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 90_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // One browser at a time: two cores, and Chromium is the heaviest thing running.
    maxWorkers: 1,
  },
});
