import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { type Config, loadConfig } from './config.ts';
import { type AppContext, createContext } from './context.ts';
import { createLogger, logDestination } from './logger.ts';
import { Secrets } from './secrets.ts';
import { sql } from 'kysely';
import { DataDirLockedError, openStore, type Store } from '../db/database.ts';
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

/**
 * A start that cannot go on for a reason the operator fixes in the configuration: the CLI prints
 * its message as one line (no stack trace) and exits non-zero. The message names the setting.
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** DATABASE_URL as it may be printed: the password masked. */
export function displayDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable)';
  }
}

/**
 * Where DATABASE_URL points, as node-postgres reads it: a host name and port, or the directory of
 * PostgreSQL's Unix socket. A socket is named by a percent-encoded path as the host
 * (`postgres://user@%2Fvar%2Frun%2Fpostgresql/db`) or by a `host` parameter, which wins over the
 * URL's host as it does in node-postgres (`postgres:///db?host=/var/run/postgresql`). Null when the
 * URL is not one.
 */
export function databaseLocation(url: string): { host: string; port: number; database: string; socket: boolean } | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  let host: string;
  try {
    host = u.searchParams.get('host') ?? decodeURIComponent(u.hostname);
  } catch {
    return null;
  }
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  return { host, port: Number(u.searchParams.get('port') ?? u.port) || 5432, database, socket: host.startsWith('/') };
}

/** A DATABASE_URL node-postgres can use: postgres:// or postgresql:// with a host or a Unix socket's directory. */
export function checkDatabaseUrl(url: string): void {
  const where = databaseLocation(url);
  if (!where) {
    throw new StartupError('DATABASE_URL is not a URL: expected postgres://user:password@host:5432/database (or unset it to use the embedded database)');
  }
  const protocol = new URL(url).protocol;
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new StartupError(`DATABASE_URL must start with postgres:// or postgresql://, got ${protocol}// (or unset it to use the embedded database)`);
  }
  if (!where.host) {
    throw new StartupError('DATABASE_URL names no host: expected postgres://user:password@host:5432/database (or, for a Unix socket, postgres://user@%2Fvar%2Frun%2Fpostgresql/database)');
  }
}

/** Why the database could not be used at start, in one line naming DATABASE_URL (or the data dir). */
export function databaseStartupError(err: unknown, config: Config): StartupError {
  const e = err as { code?: string; message?: string; hostname?: string };
  const where = config.databaseUrl ? `the database in DATABASE_URL (${displayDatabaseUrl(config.databaseUrl)})` : `the embedded database in ${config.dataDir} (CHECKSTAND_DATA_DIR)`;
  const inner = (e.message ?? String(err)).split('\n')[0];
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_NONAME') {
    return new StartupError(`DATABASE_URL names a host that does not resolve: "${e.hostname ?? (config.databaseUrl ? databaseLocation(config.databaseUrl)?.host : '?')}" (${inner})`);
  }
  if (isDatabaseUnavailable(err)) {
    return new StartupError(`${where} is not reachable: ${inner || e.code}; waited ${Math.round(config.dbStartupWaitMs / 1000)} s (DATABASE_STARTUP_WAIT_MS)`);
  }
  if (e.code === '28P01' || e.code === '28000') return new StartupError(`${where} refused the login: ${inner}`);
  if (e.code === '3D000') return new StartupError(`${where}: ${inner}`);
  return new StartupError(`${where} could not be opened: ${inner}`);
}

/**
 * The master key. Embedded: CHECKSTAND_SECRET_KEY, else `<data dir>/secret.key` (generated on
 * first start). PostgreSQL: CHECKSTAND_SECRET_KEY is required, so a `serve` on PostgreSQL writes
 * nothing on the local disk; a `secret.key` an earlier version generated in the data dir is still
 * read (with a warning) so its encrypted credentials stay readable, but none is ever created.
 */
function secretsFor(config: Config, log: Logger): Secrets {
  if (config.secretKey) {
    try {
      return Secrets.fromString(config.secretKey);
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
  }
  if (!config.databaseUrl) return Secrets.loadOrCreate(config.dataDir);
  const legacy = path.join(config.dataDir, 'secret.key');
  if (fs.existsSync(legacy)) {
    log.warn({ file: legacy }, 'CHECKSTAND_SECRET_KEY is not set: using the key an earlier start generated in the data dir; move it to CHECKSTAND_SECRET_KEY');
    return Secrets.fromString(fs.readFileSync(legacy, 'utf8').trim());
  }
  throw new StartupError(
    'CHECKSTAND_SECRET_KEY is required with DATABASE_URL (it encrypts provider credentials in the database): ' +
      'generate one with `node -e "console.log(require(\'crypto\').randomBytes(32).toString(\'hex\'))"` and keep it with DATABASE_URL',
  );
}

export interface RuntimeOptions {
  migrate?: boolean;
  config?: Config;
  log?: Logger;
  /** Where this process logs when `log` is not given: 1 (stdout, servers) or 2 (stderr: one-shot commands whose stdout is their answer). */
  logFd?: 1 | 2;
}

/** Opens the database (locking the embedded data dir), applies migrations and assembles the services. */
export async function openRuntime(opts: RuntimeOptions = {}): Promise<Runtime> {
  const config = opts.config ?? loadConfig();
  const log = opts.log ?? createLogger(config.logLevel, logDestination({ fd: opts.logFd ?? 1, format: config.logFormat }));
  if (config.databaseUrl) checkDatabaseUrl(config.databaseUrl);
  const secrets = secretsFor(config, log);
  let store: Store;
  try {
    store = await openStore({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      poolMax: config.dbPoolMax,
      preparedStatements: config.dbPreparedStatements,
      protocolTransactions: config.dbProtocolTransactions,
      connectTimeoutMs: config.dbConnectTimeoutMs,
      sharedBuffers: config.embeddedSharedBuffers,
    });
  } catch (err) {
    if (err instanceof DataDirLockedError) throw err;
    throw databaseStartupError(err, config);
  }
  watchDatabase(store, log);
  try {
    try {
      await waitForDatabase(store, log, config.dbStartupWaitMs);
    } catch (err) {
      throw databaseStartupError(err, config);
    }
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
