import fs from 'node:fs';
import { Writable } from 'node:stream';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { inject } from 'vitest';
import type { Clock } from '../../src/app/clock.ts';
import { loadConfig } from '../../src/app/config.ts';
import { type AppContext, createContext } from '../../src/app/context.ts';
import { randomToken } from '../../src/app/ids.ts';
import { createLogger } from '../../src/app/logger.ts';
import { Secrets } from '../../src/app/secrets.ts';
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
  anonymous: ApiClient;
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

/** Boots the real server on a fresh copy of the migrated database, listening on a loopback port. */
export async function startTestApp(env: Record<string, string> = {}, opts: { clock?: Clock } = {}): Promise<TestApp> {
  const { store, drop } = await openTestStore();
  const config = { ...loadConfig({ ...UNREACHED_LIMITS, ...env }), port: 0 };
  const secrets = new Secrets(Buffer.alloc(32, 7));
  const ctx = createContext(config, store, secrets, opts.clock);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  const app = await buildServer(ctx, createLogger(process.env.TEST_LOG_LEVEL || 'info', sink));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    url,
    ctx,
    store,
    logs,
    anonymous: new ApiClient(url, undefined),
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
