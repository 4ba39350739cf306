import path from 'node:path';

export interface Config {
  /** postgres://… when set; otherwise the embedded PGlite database under dataDir. */
  databaseUrl: string | undefined;
  dataDir: string;
  host: string;
  port: number;
  /** 32-byte key (hex or base64) for AES-256-GCM of provider secrets and keyed hashes. Embedded mode generates one in dataDir. */
  secretKey: string | undefined;
  logLevel: string;
  bodyLimitBytes: number;
  idempotencyTtlHours: number;
  publicBaseUrl: string | undefined;
  dbPoolMax: number;
}

function intFrom(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.CHECKSTAND_DATA_DIR || './data'),
    host: env.HOST || '127.0.0.1',
    port: intFrom(env.PORT, 3000, 'PORT'),
    secretKey: env.CHECKSTAND_SECRET_KEY || undefined,
    logLevel: env.LOG_LEVEL || 'info',
    bodyLimitBytes: intFrom(env.BODY_LIMIT_BYTES, 256 * 1024, 'BODY_LIMIT_BYTES'),
    idempotencyTtlHours: intFrom(env.IDEMPOTENCY_TTL_HOURS, 24, 'IDEMPOTENCY_TTL_HOURS'),
    publicBaseUrl: env.PUBLIC_BASE_URL || undefined,
    dbPoolMax: intFrom(env.DATABASE_POOL_MAX, 10, 'DATABASE_POOL_MAX'),
  };
}
