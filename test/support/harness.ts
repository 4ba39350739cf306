import fs from 'node:fs';
import { Writable } from 'node:stream';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { inject } from 'vitest';
import { clearConfigCaches, configureConfigCaches } from '../../src/app/cache.ts';
import type { Clock } from '../../src/app/clock.ts';
import { loadConfig } from '../../src/app/config.ts';
import { type AppContext, createContext } from '../../src/app/context.ts';
import { randomToken } from '../../src/app/ids.ts';
import { createLogger } from '../../src/app/logger.ts';
import { Secrets } from '../../src/app/secrets.ts';
import { CONTRACT_CHECK_ENV } from '../../src/app/contract-check.ts';
import type { Http } from '../../src/app/http.ts';
import { buildServer } from '../../src/app/server.ts';
import { openStore, type Store } from '../../src/db/database.ts';
import { withDatabase } from './global-setup.ts';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string | undefined,
  ) {}

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const h: Record<string, string> = { accept: 'application/json', ...headers };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      h['content-type'] ??= 'application/json';
      payload = typeof body === 'string' ? body : JSON.stringify(body);
    }
    const res = await fetch(this.baseUrl + path, { method, headers: h, body: payload });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* non-JSON bodies (metrics, docs) stay text */
    }
    return { status: res.status, body: parsed, headers: res.headers, text };
  }

  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, undefined, headers);
  }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body ?? {}, headers);
  }
  patch<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('PATCH', path, body ?? {}, headers);
  }
  delete<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('DELETE', path, undefined, headers);
  }
}

/**
 * A browser: keeps the cookies the server sets (the session, the CSRF secret) and sends the
 * session's CSRF token as x-csrf-token on unsafe methods (unless `csrf: false`).
 */
export class SessionClient extends ApiClient {
  readonly cookies = new Map<string, string>();
  csrfToken: string | undefined;
  /** The Set-Cookie lines of the last answer that had any. */
  lastSetCookie: string[] = [];

  constructor(baseUrl: string, readonly opts: { csrf?: boolean } = {}) {
    super(baseUrl, undefined);
  }

  override async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const h: Record<string, string> = { ...headers };
    if (this.cookies.size > 0) h.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (this.opts.csrf !== false && this.csrfToken && !['GET', 'HEAD'].includes(method)) h['x-csrf-token'] ??= this.csrfToken;
    const res = await super.request<T>(method, path, body, h);
    const set = res.headers.getSetCookie();
    if (set.length > 0) this.lastSetCookie = set;
    for (const line of set) {
      const [pair] = line.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1).trim();
      if (value === '' || /max-age=0\b/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const token = (res.body as { data?: { csrf_token?: unknown } } | undefined)?.data?.csrf_token;
    if (typeof token === 'string') this.csrfToken = token;
    return res;
  }
}

/** Logs in over HTTP (POST /v1/sessions): a SessionClient holding the session cookie and its CSRF token. */
export async function login(url: string, credentials: { email: string; password: string; totp_code?: string; team_id?: string }): Promise<SessionClient & { login: ApiResponse }> {
  const client = new SessionClient(url);
  const res = await client.post('/v1/sessions', credentials);
  if (res.status !== 201) throw new Error(`login as ${credentials.email} failed: ${res.status} ${res.text}`);
  return Object.assign(client, { login: res });
}

export interface TestTeam {
  teamId: string;
  token: string;
  api: ApiClient;
}

export interface TestApp {
  url: string;
  ctx: AppContext;
  store: Store;
  /** Every log line the server wrote, as JSON text. */
  logs: string[];
  newTeam(name?: string): Promise<TestTeam>;
  /** Forgets the process's cached configuration (src/app/cache.ts): for a test that changes it with SQL, behind the services' back. */
  clearCaches(): void;
  anonymous: ApiClient;
  /** The Fastify instance (test/contract.test.ts reads and spoils its OpenAPI document). */
  server: Http;
  close(): Promise<void>;
}

async function openTestStore(): Promise<{ store: Store; drop: () => Promise<void> }> {
  const templateDatabase = inject('templateDatabase');
  const url = process.env.TEST_DATABASE_URL;
  if (templateDatabase && url) {
    const name = `${templateDatabase}_${randomToken(8).toLowerCase()}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${templateDatabase}`);
    await admin.end();
    // DROP DATABASE … WITH (FORCE) at the end ends pooled connections: expected, not a failure.
    const store = await openStore({ databaseUrl: withDatabase(url, name), dataDir: '.vitest-tmp', poolMax: 10 });
    return {
      store,
      drop: async () => {
        const a = new pg.Client({ connectionString: url });
        await a.connect();
        await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await a.end();
      },
    };
  }
  const snapshot = fs.readFileSync(inject('snapshotPath'));
  const pglite = new PGlite({ loadDataDir: new Blob([snapshot]) });
  const store = await openStore({ dataDir: '.vitest-tmp', pglite });
  return { store, drop: async () => pglite.close() };
}

/**
 * Budgets and an in-flight cap no test reaches unless it passes its own (test/rate-limits.test.ts,
 * test/load-shedding.test.ts); no event-loop shedding, which a busy test machine would trip.
 */
const UNREACHED_LIMITS = {
  RATE_LIMIT_TOKEN_READS: '1000000/1m',
  RATE_LIMIT_TOKEN_WRITES: '1000000/1m',
  RATE_LIMIT_IP_READS: '1000000/1m',
  RATE_LIMIT_IP_WRITES: '1000000/1m',
  RATE_LIMIT_FAILED_AUTH: '1000000/1m',
  RATE_LIMIT_WEBHOOKS: '1000000/1m',
  OVERLOAD_MAX_IN_FLIGHT: '100000',
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
};

/**
 * The contract check (src/app/contract-check.ts): every answer of a server the suite boots is held to
 * the OpenAPI document, for its route and status; a mismatch is a 500 and a logged violation.
 * A test that must see the server without it sets CHECKSTAND_CONTRACT_CHECK=0 before startTestApp.
 */
process.env[CONTRACT_CHECK_ENV] ??= '1';

/** Boots the real server on a fresh copy of the migrated database, listening on a loopback port. */
export async function startTestApp(env: Record<string, string> = {}, opts: { clock?: Clock } = {}): Promise<TestApp> {
  const { store, drop } = await openTestStore();
  const config = { ...loadConfig({ ...UNREACHED_LIMITS, ...env }), port: 0 };
  const secrets = new Secrets(Buffer.alloc(32, 7));
  configureConfigCaches(store, { ttlMs: config.configCacheTtlMs });
  const ctx = createContext(config, store, secrets, opts.clock);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  const app = await buildServer(ctx, createLogger(process.env.TEST_LOG_LEVEL || 'info', sink));
  // The contract check reads the OpenAPI document: built once here (seconds on a busy machine), not in a test's first request.
  if (process.env[CONTRACT_CHECK_ENV] === '1') {
    await app.ready();
    app.swagger();
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    url,
    ctx,
    store,
    logs,
    anonymous: new ApiClient(url, undefined),
    server: app,
    clearCaches: () => clearConfigCaches(store),
    async newTeam(name = 'Team') {
      const team = await ctx.services.teams.createTeam(name);
      const { secret } = await ctx.services.teams.createToken(team.id, 'test');
      return { teamId: team.id, token: secret, api: new ApiClient(url, secret) };
    },
    async close() {
      // A provider stand-in's webhook delivery still in flight when a file ends keeps its keep-alive
      // connection open after it is answered, for Fastify's keepAliveTimeout (72 s): close whatever
      // connections are left shortly after closing starts instead of waiting for them.
      const closing = app.close();
      const force = setTimeout(() => app.server.closeAllConnections(), 1000);
      await closing;
      clearTimeout(force);
      await ctx.services.mail.close();
      await store.close();
      await drop();
    },
  };
}
