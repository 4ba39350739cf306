import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import client from 'prom-client';
import type { Store } from '../../db/database.ts';
import { ApiError } from '../errors.ts';
import { sha256Hex } from '../secrets.ts';
import { postgresRateLimitStore } from './pg-store.ts';
import { classify, isWrite } from './policy.ts';
import type { Budget, RateLimitSettings } from './settings.ts';

type BucketName = 'failed_auth' | 'ip_read' | 'ip_write' | 'token_read' | 'token_write' | 'webhook';

interface Spent {
  bucket: BucketName;
  max: number;
  remaining: number;
  resetSeconds: number;
  /** Past the budget: this request is refused. */
  exceeded: boolean;
}

interface Bucket {
  name: BucketName;
  /** `increment: false` reads the count without spending (the failed-auth gate). */
  spend(req: FastifyRequest, increment?: boolean): Promise<Spent | undefined>;
}

/** The budget key of a bearer token: a prefix of its SHA-256, so no map, row or log holds the secret. */
function tokenKey(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization;
  const secret = header?.startsWith('Bearer ') ? header.slice(7).trim() : '';
  return secret ? sha256Hex(secret).slice(0, 32) : undefined;
}

function addressKey(req: FastifyRequest): string {
  return normalizeIP(req.ip);
}

function setHeaders(reply: FastifyReply, s: Spent) {
  reply.header('ratelimit-limit', s.max).header('ratelimit-remaining', s.remaining).header('ratelimit-reset', s.resetSeconds);
}

/**
 * Budgets with @fastify/rate-limit: per client address (reads and writes apart), per API token
 * (likewise, keyed by a hash of the token), failed authentications per address, and provider
 * webhooks per address. Over budget: 429 `rate_limited` in the envelope with Retry-After and the
 * RateLimit-* headers; under it, the RateLimit-* headers of the budget closest to running out.
 */
export async function registerRateLimits(app: FastifyInstance, settings: RateLimitSettings, store: Store, registry: client.Registry) {
  const limited = new client.Counter({
    name: 'checkstand_rate_limited_total',
    help: 'Requests answered 429 rate_limited, by the budget that ran out',
    labelNames: ['bucket'] as const,
    registers: [registry],
  });
  const storeErrors = new client.Counter({
    name: 'checkstand_rate_limit_store_errors_total',
    help: 'Budget checks that failed in the store; the request was served unlimited',
    registers: [registry],
  });

  const shared = settings.store === 'postgres' ? postgresRateLimitStore(store, (err) => app.log.warn({ err }, 'rate_limits purge failed')) : undefined;
  await app.register(rateLimit, { global: false, store: shared, skipOnError: false });

  function bucket(name: BucketName, budget: Budget | null, keyOf: (req: FastifyRequest) => string | undefined): Bucket {
    if (!budget) return { name, spend: async () => undefined };
    const check = app.createRateLimit({
      max: budget.max,
      timeWindow: budget.windowMs,
      keyGenerator: (req) => `${name}:${keyOf(req)}`,
    });
    return {
      name,
      async spend(req, increment = true) {
        if (keyOf(req) === undefined) return undefined;
        try {
          const r = await check(req, { increment });
          if (r.isAllowed) return undefined;
          return { bucket: name, max: r.max, remaining: r.remaining, resetSeconds: r.ttlInSeconds, exceeded: r.isExceeded };
        } catch (err) {
          storeErrors.inc();
          req.log.warn({ err, bucket: name }, 'rate limit store failed: request not limited');
          return undefined;
        }
      },
    };
  }

  const ipRead = bucket('ip_read', settings.ipReads, addressKey);
  const ipWrite = bucket('ip_write', settings.ipWrites, addressKey);
  const tokenRead = bucket('token_read', settings.tokenReads, tokenKey);
  const tokenWrite = bucket('token_write', settings.tokenWrites, tokenKey);
  const failedAuth = bucket('failed_auth', settings.failedAuth, addressKey);
  const webhook = bucket('webhook', settings.webhooks, addressKey);

  function refuse(reply: FastifyReply, s: Spent): never {
    limited.inc({ bucket: s.bucket });
    setHeaders(reply, { ...s, remaining: 0 });
    reply.header('retry-after', Math.max(1, s.resetSeconds));
    throw new ApiError('rate_limited');
  }

  app.addHook('onRequest', async (req, reply) => {
    const kind = classify(req.url);
    if (kind === 'exempt') return;
    const write = isWrite(req.method);
    const order: Bucket[] = kind === 'webhook' ? [webhook] : [write ? ipWrite : ipRead];
    if (kind === 'api') {
      // Refused before the token is even looked up, right or wrong: otherwise a blocked guesser
      // would still learn which guess is right.
      const failures = await failedAuth.spend(req, false);
      if (failures && failures.remaining === 0) refuse(reply, failures);
      order.push(write ? tokenWrite : tokenRead);
    }
    let tightest: Spent | undefined;
    for (const b of order) {
      const s = await b.spend(req);
      if (!s) continue;
      if (s.exceeded) refuse(reply, s);
      if (!tightest || s.remaining <= tightest.remaining) tightest = s;
    }
    if (tightest) setHeaders(reply, tightest);
  });

  // A 401 on the API is a failed authentication: counted before the answer leaves, so the next
  // request already sees it.
  app.addHook('onSend', async (req, reply, payload) => {
    if (reply.statusCode === 401 && !req.team && classify(req.url) === 'api') await failedAuth.spend(req);
    return payload;
  });
}
