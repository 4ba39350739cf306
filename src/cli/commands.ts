/**
 * The one-shot commands (`seed`, `migrate`, `reconcile`, `team create`, `token …`) and `worker`. Their stdout is
 * their answer (`--json` prints only JSON there): logs go to stderr.
 */
import { loadConfig } from '../app/config.ts';
import { type Runtime, openRuntime } from '../app/runtime.ts';
import { seedDemo } from '../app/seed.ts';
import { teamView, tokenView } from '../modules/teams/service.ts';
import { sandboxOptionsFromEnv, startSandbox } from '../sandbox/server.ts';
import { startWorkerMetrics } from '../worker/metrics-server.ts';
import { startWorker } from '../worker/worker.ts';
import { seedSummary } from './banner.ts';
import { applyHeapGrowth } from './cluster.ts';
import { surviveDatabaseOutages } from './serve.ts';

async function withRuntime<T>(fn: (rt: Runtime) => Promise<T>, opts: { migrate?: boolean } = {}): Promise<T> {
  const rt = await openRuntime({ ...opts, logFd: 2 });
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

function sandboxUrlFromEnv(): string {
  const o = sandboxOptionsFromEnv();
  return `http://${o.host === '0.0.0.0' ? '127.0.0.1' : o.host}:${o.port}`;
}

export async function sandbox(): Promise<void> {
  const s = await startSandbox(sandboxOptionsFromEnv());
  console.log(`checkstand sandbox listening on ${s.url} (test cards: docs/sandbox.md)`);
  const stop = async () => {
    await s.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

export async function worker(): Promise<void> {
  const rt = await openRuntime();
  applyHeapGrowth(rt.log, 'the outbox worker');
  surviveDatabaseOutages(rt.log);
  const w = startWorker(rt.ctx, rt.log);
  const port = rt.config.workerMetricsPort;
  const metrics = port === undefined ? undefined : await startWorkerMetrics(rt.ctx.store, { host: rt.config.host, port }, rt.log);
  if (metrics) rt.log.info({ url: metrics.url }, 'worker metrics serving (/metrics, /healthz, /readyz)');
  const stop = async () => {
    await metrics?.close();
    await w.stop();
    await rt.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

export function reconcile(graceSeconds: string): Promise<void> {
  return withRuntime(async (rt) => {
    const grace = Number(graceSeconds);
    if (!Number.isFinite(grace) || grace < 0) throw new Error('--grace-seconds must be a number of seconds, 0 or more');
    const r = rt.ctx.services.checkout.reconcile;
    const attempts = await r.recoverUnknownAttempts(grace * 1000, rt.log);
    const redirects = await r.reconcilePendingPayments(grace * 1000);
    console.log(JSON.stringify({ attempts, redirects }));
  });
}

export function migrate(): Promise<void> {
  return withRuntime(
    async (rt) => {
      const { migrateToLatest } = await import('../db/migrate.ts');
      const applied = await migrateToLatest(rt.ctx.store.rootHandle);
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    },
    { migrate: false },
  );
}

export function seed(o: { demo: boolean; json: boolean; teamName: string; sandboxUrl?: string; gateway: boolean }): Promise<void> {
  return withRuntime(async (rt) => {
    if (!o.demo) {
      const team = await rt.ctx.services.teams.createTeam(o.teamName);
      const { token, secret } = await rt.ctx.services.teams.createToken(team.id, 'default');
      console.log(o.json ? JSON.stringify({ team_id: team.id, token: secret, token_id: token.id }) : `team ${team.id}\ntoken ${secret} (shown once)`);
      return;
    }
    const seeded = await seedDemo(rt.ctx, { teamName: o.teamName, sandboxUrl: o.gateway ? (o.sandboxUrl ?? sandboxUrlFromEnv()) : undefined, log: rt.log });
    const cfg = loadConfig();
    console.log(o.json ? JSON.stringify(seeded) : seedSummary(cfg.publicBaseUrl ?? `http://${cfg.host}:${cfg.port}`, seeded));
  });
}

/**
 * `checkstand team create`: a merchant team, or (`--kind provider`) a Customer Service or Affiliate
 * Provider organisation that merchants then grant access (POST /v1/provider-grants). Opens the
 * database itself: on the embedded database, stop a running `start`/`serve` first (or use PostgreSQL).
 */
export function teamCreate(o: { name: string; kind: string; json: boolean }): Promise<void> {
  const name = o.name.trim();
  if (name === '' || name.length > 200) throw new Error('--name must be 1 to 200 characters');
  if (o.kind !== 'merchant' && o.kind !== 'provider') throw new Error('--kind must be merchant or provider');
  const kind: 'merchant' | 'provider' = o.kind;
  return withRuntime(async (rt) => {
    const team = await rt.ctx.services.teams.createTeam(name, kind);
    const view = { ...teamView(team), kind: team.kind };
    if (o.json) return console.log(JSON.stringify(view));
    const next =
      kind === 'provider'
        ? `a provider organisation: a merchant grants it access with POST /v1/provider-grants {"provider_id": "${team.id}", "kind": "customer_service" | "affiliate"}; its users: checkstand user create --team ${team.id}`
        : `a merchant team: checkstand token create --team ${team.id}, checkstand user create --team ${team.id}`;
    console.log(`${team.id}\n(${name}: ${next})`);
  });
}

/** The token commands on the database itself (PostgreSQL, or an embedded data dir no server holds). */
export const tokensDirect = {
  create: (team: string, name: string) =>
    withRuntime(async (rt) => {
      const { token, secret } = await rt.ctx.services.teams.createToken(team, name);
      return { ...tokenView(token), token: secret };
    }),
  list: (team: string | undefined) => withRuntime(async (rt) => (await rt.ctx.services.teams.listTokens(team)).map(tokenView)),
  revoke: (id: string) => withRuntime(async (rt) => tokenView(await rt.ctx.services.teams.revokeToken(id))),
  rotate: (id: string, graceSeconds: number) =>
    withRuntime(async (rt) => {
      const r = await rt.ctx.services.teams.rotateToken(id, graceSeconds);
      return { ...tokenView(r.token), token: r.secret, replaced: tokenView(r.old) };
    }),
};
