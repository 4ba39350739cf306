/**
 * The reliability tests judge what crashes and restarts do, not the request budgets: their real
 * `serve` processes run with every rate-limit budget off and no load shedding, which a busy CI
 * machine would otherwise trip (test/rate-limits.test.ts and test/load-shedding.test.ts cover those).
 */
export const LIMITS_OFF: NodeJS.ProcessEnv = {
  RATE_LIMIT_TOKEN_READS: 'off',
  RATE_LIMIT_TOKEN_WRITES: 'off',
  RATE_LIMIT_IP_READS: 'off',
  RATE_LIMIT_IP_WRITES: 'off',
  RATE_LIMIT_FAILED_AUTH: 'off',
  RATE_LIMIT_WEBHOOKS: 'off',
  OVERLOAD_MAX_IN_FLIGHT: '100000',
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
};
