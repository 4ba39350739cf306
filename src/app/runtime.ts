import type { Logger } from 'pino';
import { type Config, loadConfig } from './config.ts';
import { type AppContext, createContext } from './context.ts';
import { createLogger } from './logger.ts';
import { Secrets } from './secrets.ts';
import { openStore } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';

export interface Runtime {
  config: Config;
  ctx: AppContext;
  log: Logger;
  close(): Promise<void>;
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
    onPoolError: (err) => log.warn({ err }, 'an idle database connection failed; the pool replaces it'),
  });
  try {
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
