import Fastify, { type FastifyInstance } from 'fastify';
import { loggerOptions } from '../app/logger.ts';
import { extpaySandbox } from './extpay.ts';
import { nmiSandbox } from './nmi.ts';
import { threedsSandbox } from './threeds.ts';

export interface SandboxOptions {
  host?: string;
  port?: number;
  /** Delay of the slow card, default 2000. */
  slowMs?: number;
}

export const DEFAULT_SANDBOX_PORT = 3100;
export const DEFAULT_SLOW_MS = 2000;

/** The provider stand-ins on one Fastify server; each provider is its own plugin. */
export async function buildSandbox(opts: SandboxOptions = {}): Promise<FastifyInstance> {
  // Warnings and errors only (Fastify's per-request lines are info), never bodies: the card gateway's
  // requests carry card numbers. The app's logger options add redaction and PAN masking on top.
  // A stand-in stops at once: the app's keep-alive connections to it are not waited for (Fastify keeps them 72 s).
  const app = Fastify({ logger: loggerOptions('warn'), forceCloseConnections: true });
  app.get('/sandbox/health', async () => ({ ok: true, providers: ['nmi', 'threeds', 'extpay'] }));
  await app.register(nmiSandbox, { slowMs: opts.slowMs ?? DEFAULT_SLOW_MS });
  // The 3-D Secure gateway: base URL `${url}/3ds`.
  await app.register(threedsSandbox, { prefix: '/3ds' });
  // The external checkout provider (Whop): API bases `${url}/extpay/sandbox/api/v1` and `${url}/extpay/production/api/v1`.
  await app.register(extpaySandbox, { prefix: '/extpay' });
  return app;
}

/** Starts the sandbox on loopback (port 0 picks a free port) and says where it listens. */
export async function startSandbox(opts: SandboxOptions = {}): Promise<{ url: string; close(): Promise<void> }> {
  const app = await buildSandbox(opts);
  const host = opts.host ?? '127.0.0.1';
  await app.listen({ host, port: opts.port ?? DEFAULT_SANDBOX_PORT });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : (opts.port ?? DEFAULT_SANDBOX_PORT);
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    close: async () => {
      await app.close();
    },
  };
}

/** `checkstand sandbox` reads SANDBOX_HOST (127.0.0.1), SANDBOX_PORT (3100) and SANDBOX_SLOW_MS (2000). */
export function sandboxOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): SandboxOptions {
  const int = (name: string, fallback: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer`);
    return n;
  };
  return { host: env.SANDBOX_HOST || '127.0.0.1', port: int('SANDBOX_PORT', DEFAULT_SANDBOX_PORT), slowMs: int('SANDBOX_SLOW_MS', DEFAULT_SLOW_MS) };
}
