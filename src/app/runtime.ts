import type { Logger } from 'pino';
import { type Config, loadConfig } from './config.ts';
import { type AppContext, createContext } from './context.ts';
import { createLogger } from './logger.ts';
import { Secrets } from './secrets.ts';
import { sql } from 'kysely';
import { openStore, type Store } from '../db/database.ts';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { migrateToLatest } from '../db/migrate.ts';

export interface Runtime {
  config: Config;
  ctx: AppContext;
  log: Logger;
  close(): Promise<void>;
}

/**
 * One line when the database goes away and one when it is back, whatever noticed it (a request,
 * a job, or the probe): the log lines an operator alerts on, next to `checkstand_db_up`.
 */
function watchDatabase(store: Store, log: Logger): void {
  store.health.on('down', (err) =>
    log.error({ err: { message: err.message, code: (err as { code?: string }).code } }, 'database unavailable: requests answer 503 database_unavailable and jobs wait until it is back'),
  );
  store.health.on('up', (outageMs) => log.warn({ outage_ms: outageMs }, 'database reachable again'));
}

/**
 * A process started while PostgreSQL is still coming up (a restart, a failover, containers
 * started together) waits for it instead of exiting; anything other than "not reachable yet"
 * fails at once.
 */
async function waitForDatabase(store: Store, log: Logger, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (let attempt = 0; ; attempt++) {
    try {
      await store.run((db) => sql`select 1`.execute(db));
      return;
    } catch (err) {
      if (!isDatabaseUnavailable(err) || Date.now() >= deadline) throw err;
      if (attempt === 0) log.warn({ wait_ms: waitMs, err: { message: (err as Error).message } }, 'waiting for the database');
      await new Promise((r) => setTimeout(r, Math.min(1000, 100 * 2 ** attempt)));
    }
  }
}

/** Opens the database (locking the embedded data dir), applies migrations and assembles the services. */
export async function openRuntime(opts: { migrate?: boolean; config?: Config; log?: Logger } = {}): Promise<Runtime> {
  const config = opts.config ?? loadConfig();
  const log = opts.log ?? createLogger(config.logLevel);
  const secrets = config.secretKey ? Secrets.fromString(config.secretKey) : Secrets.loadOrCreate(config.dataDir);
  if (!config.secretKey && config.databaseUrl) {
    log.warn({ file: `${config.dataDir}/secret.key` }, 'CHECKSTAND_SECRET_KEY is not set: using a generated key from the data dir; set it in production');
  }
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolMax: config.dbPoolMax,
    connectTimeoutMs: config.dbConnectTimeoutMs,
  });
  watchDatabase(store, log);
  try {
    await waitForDatabase(store, log, config.dbStartupWaitMs);
    if (opts.migrate !== false) {
      const applied = await migrateToLatest(store.rootHandle);
      if (applied.length > 0) log.info({ applied }, 'migrations applied');
    }
  } catch (err) {
    await store.close();
    throw err;
  }
  const ctx = createContext(config, store, secrets);
  return { config, ctx, log, close: () => store.close() };
}
