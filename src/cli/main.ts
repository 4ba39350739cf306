import fs from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { loadConfig } from '../app/config.ts';
import type { Logger } from 'pino';
import { DataDirLockedError } from '../db/database.ts';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { type Runtime, openRuntime } from '../app/runtime.ts';
import { type DemoSeed, seedDemo } from '../app/seed.ts';
import { buildServer } from '../app/server.ts';
import { tokenView } from '../modules/teams/service.ts';
import { sandboxOptionsFromEnv, startSandbox } from '../sandbox/server.ts';
import { startWorkerMetrics } from '../worker/metrics-server.ts';
import { startWorker } from '../worker/worker.ts';
import { demoFunnelOptions, enableDemoFunnel } from '../../web/demo/funnel.ts';

/** `npm start` runs the provider sandbox beside the API unless CHECKSTAND_SANDBOX=off. */
function sandboxWanted(): boolean {
  return (process.env.CHECKSTAND_SANDBOX ?? 'on') !== 'off';
}

function sandboxUrlFromEnv(): string {
  const o = sandboxOptionsFromEnv();
  return `http://${o.host === '0.0.0.0' ? '127.0.0.1' : o.host}:${o.port}`;
}

function int(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a non-negative integer');
  return n;
}

async function withRuntime<T>(fn: (rt: Runtime) => Promise<T>, opts: { migrate?: boolean } = {}): Promise<T> {
  const rt = await openRuntime(opts);
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

export function quickstart(baseUrl: string, seed: DemoSeed): string {
  const auth = `-H "Authorization: Bearer ${seed.token}" -H "Content-Type: application/json"`;
  return [
    '',
    '  Checkstand is running.',
    '',
    `  API        ${baseUrl}`,
    `  API docs   ${baseUrl}/docs`,
    `  Demo shop  ${baseUrl}/demo   (a funnel calling this API: checkout, upsell, thank-you)`,
    `  API token  ${seed.token}`,
    '             (shown once: it is stored only as a hash. `npx checkstand token create --team ' + seed.team_id + '` makes another.)',
    '',
    ...(seed.gateway_id ? ['  Card gateway  the sandbox (test cards in docs/sandbox.md; 4111 1111 1111 1111 approves)', ''] : []),
    '  Try it:',
    `    curl -s ${auth} \\`,
    `      -d '{"campaign_id":"${seed.campaign_id}","customer":{"email":"ada@example.com","first_name":"Ada","last_name":"Lovelace"},"products":[{"offer_id":"${seed.offers.serum}","quantity":1}]}' \\`,
    `      ${baseUrl}/checkout/leads`,
    `    curl -s -H "Authorization: Bearer ${seed.token}" "${baseUrl}/v1/orders?limit=5"`,
    '',
  ].join('\n');
}

/**
 * A long-running process outlives database outages: a connection error that escaped every caller
 * (a promise nobody awaited) is logged, not fatal. Anything else still ends the process, as
 * Node does by default, so a real bug is not left running in an unknown state.
 */
function surviveDatabaseOutages(log: Logger): void {
  process.on('unhandledRejection', (err) => {
    if (isDatabaseUnavailable(err)) {
      log.warn({ err: { message: (err as Error).message } }, 'background database call failed: database unavailable');
      return;
    }
    log.fatal({ err }, 'unhandled promise rejection');
    process.exit(1);
  });
}

async function serve(opts: { worker: boolean; seedIfEmpty: boolean; sandbox: boolean }) {
  const rt = await openRuntime();
  const { config, ctx, log } = rt;
  surviveDatabaseOutages(log);
  const sandbox = opts.sandbox ? await startSandbox(sandboxOptionsFromEnv()) : undefined;
  if (sandbox) log.info({ url: sandbox.url }, 'provider sandbox serving (NMI-compatible card gateway)');
  let seed: DemoSeed | undefined;
  if (opts.seedIfEmpty && (await ctx.services.teams.listTeams()).length === 0) {
    seed = await seedDemo(ctx, { sandboxUrl: sandbox?.url });
    // The ids (never the token) for the README's quickstart to read.
    const { token: _token, ...ids } = seed;
    fs.mkdirSync(config.dataDir, { recursive: true });
    fs.writeFileSync(path.join(config.dataDir, 'demo.json'), JSON.stringify(ids, null, 2) + '\n');
  }
  const app = await buildServer(ctx, log);
  // Demo funnel (web/demo) on `npm start`: /demo, with a fresh `demo-funnel` token of the demo team held server-side, never printed.
  const demo = opts.seedIfEmpty ? await demoFunnelOptions(ctx, seed) : undefined;
  if (demo) enableDemoFunnel(app, demo);
  await app.listen({ host: config.host, port: config.port });
  const baseUrl = config.publicBaseUrl ?? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
  const worker = opts.worker ? startWorker(ctx, log) : undefined;
  log.info({ url: baseUrl, database: ctx.store.kind, data_dir: ctx.store.kind === 'pglite' ? config.dataDir : undefined }, 'checkstand serving');
  if (seed) process.stdout.write(quickstart(baseUrl, seed) + '\n');

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    await worker?.stop();
    await app.close();
    await ctx.services.mail.close();
    await sandbox?.close();
    await rt.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

export function buildCli(): Command {
  const program = new Command('checkstand')
    .description('Checkstand: self-hostable checkout and order-management API.\nConfiguration is read from the environment: see the README.')
    .showHelpAfterError();

  program
    .command('start')
    .description('Everything on one machine: API server, worker and the provider sandbox (CHECKSTAND_SANDBOX=off to skip); on an empty database, a demo team, funnel, sandbox gateway and token')
    .action(() => serve({ worker: true, seedIfEmpty: true, sandbox: sandboxWanted() }));

  program
    .command('serve')
    .description('Run the HTTP API (applies migrations first)')
    .option('--with-worker', 'also run the worker in this process', false)
    .action((o: { withWorker: boolean }) => serve({ worker: o.withWorker, seedIfEmpty: false, sandbox: false }));

  program
    .command('sandbox')
    .description('Run the provider sandbox (an NMI-compatible card gateway) on its own port: SANDBOX_HOST, SANDBOX_PORT (3100), SANDBOX_SLOW_MS')
    .action(async () => {
      const s = await startSandbox(sandboxOptionsFromEnv());
      console.log(`checkstand sandbox listening on ${s.url} (test cards: docs/sandbox.md)`);
      const stop = async () => {
        await s.close();
        process.exit(0);
      };
      process.on('SIGINT', () => void stop());
      process.on('SIGTERM', () => void stop());
    });

  program
    .command('worker')
    .description('Run the background worker: scheduled housekeeping (any number of copies may run)')
    .action(async () => {
      const rt = await openRuntime();
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
    });

  program
    .command('reconcile')
    .description(
      'Run the payment recovery once and exit: ask the providers about every attempt whose answer was never recorded ' +
        '(older than the grace period) and finalize it, then re-check redirected payments nobody settled. Prints a JSON tally.',
    )
    .option('--grace-seconds <n>', 'only attempts older than this (default 120: longer than any provider call)', '120')
    .action((o: { graceSeconds: string }) =>
      withRuntime(async (rt) => {
        const grace = Number(o.graceSeconds);
        if (!Number.isFinite(grace) || grace < 0) throw new Error('--grace-seconds must be a number of seconds, 0 or more');
        const reconcile = rt.ctx.services.checkout.reconcile;
        const attempts = await reconcile.recoverUnknownAttempts(grace * 1000, rt.log);
        const redirects = await reconcile.reconcilePendingPayments(grace * 1000);
        console.log(JSON.stringify({ attempts, redirects }));
      }),
    );

  program
    .command('migrate')
    .description('Apply pending database migrations and exit')
    .action(() =>
      withRuntime(
        async (rt) => {
          const { migrateToLatest } = await import('../db/migrate.ts');
          const applied = await migrateToLatest(rt.ctx.store.rootHandle);
          console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
        },
        { migrate: false },
      ),
    );

  program
    .command('seed')
    .description('Create data. --demo: a demo team, token, campaign, offers and upsells')
    .option('--demo', 'create the demo team and funnel', false)
    .option('--json', 'print the created ids and token as one JSON object', false)
    .option('--team-name <name>', 'name of the team to create', 'Demo Store')
    .option('--sandbox-url <url>', 'with --demo: the sandbox the demo gateway points at (default from SANDBOX_HOST/SANDBOX_PORT)')
    .option('--no-gateway', 'with --demo: create no demo gateway')
    .action((o: { demo: boolean; json: boolean; teamName: string; sandboxUrl?: string; gateway: boolean }) =>
      withRuntime(async (rt) => {
        if (!o.demo) {
          const team = await rt.ctx.services.teams.createTeam(o.teamName);
          const { secret } = await rt.ctx.services.teams.createToken(team.id, 'default');
          console.log(o.json ? JSON.stringify({ team_id: team.id, token: secret }) : `team ${team.id}\ntoken ${secret} (shown once)`);
          return;
        }
        const seed = await seedDemo(rt.ctx, { teamName: o.teamName, sandboxUrl: o.gateway ? (o.sandboxUrl ?? sandboxUrlFromEnv()) : undefined });
        const cfg = loadConfig();
        console.log(o.json ? JSON.stringify(seed) : quickstart(`http://${cfg.host}:${cfg.port}`, seed));
      }),
    );

  const token = program.command('token').description('Manage API tokens');
  token
    .command('create')
    .description('Create a token for a team; the secret is printed once')
    .requiredOption('--team <team_id>', 'team id (team_…)')
    .option('--name <name>', 'a name to recognise the token by', 'default')
    .option('--json', 'print JSON', false)
    .action((o: { team: string; name: string; json: boolean }) =>
      withRuntime(async (rt) => {
        const { token: t, secret } = await rt.ctx.services.teams.createToken(o.team, o.name);
        console.log(o.json ? JSON.stringify({ ...tokenView(t), token: secret }) : `${secret}\n(id ${t.id}; shown once, stored only as a hash)`);
      }),
    );
  token
    .command('list')
    .description('List tokens (never their secrets)')
    .option('--team <team_id>', 'only this team')
    .option('--json', 'print JSON', false)
    .action((o: { team?: string; json: boolean }) =>
      withRuntime(async (rt) => {
        const rows = (await rt.ctx.services.teams.listTokens(o.team)).map(tokenView);
        if (o.json) return console.log(JSON.stringify(rows));
        if (rows.length === 0) return console.log('no tokens');
        for (const t of rows) {
          const state = t.revoked_at ? `revoked ${t.revoked_at}` : t.expires_at ? `expires ${t.expires_at}` : 'active';
          console.log(`${t.id}  ${t.team_id}  ${t.hint}  ${t.name}  ${state}  last used ${t.last_used_at ?? 'never'}`);
        }
      }),
    );
  token
    .command('revoke')
    .description('Revoke a token at once')
    .argument('<token_id>', 'token id (tok_…)')
    .action((id: string) =>
      withRuntime(async (rt) => {
        const t = await rt.ctx.services.teams.revokeToken(id);
        console.log(`revoked ${t.id} (${t.name})`);
      }),
    );
  token
    .command('rotate')
    .description('Issue a replacement token; the old one keeps working for --grace-seconds')
    .argument('<token_id>', 'token id (tok_…)')
    .option('--grace-seconds <n>', 'how long the old token stays valid (0 revokes it now)', int, 3600)
    .option('--json', 'print JSON', false)
    .action((id: string, o: { graceSeconds: number; json: boolean }) =>
      withRuntime(async (rt) => {
        const r = await rt.ctx.services.teams.rotateToken(id, o.graceSeconds);
        if (o.json) return console.log(JSON.stringify({ ...tokenView(r.token), token: r.secret, replaced: tokenView(r.old) }));
        console.log(`${r.secret}\n(new id ${r.token.id}; old token ${id} ${o.graceSeconds === 0 ? 'revoked' : `valid until ${r.old.expires_at?.toISOString()}`})`);
      }),
    );

  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      console.error(`checkstand: ${err.message}`);
      process.exit(2);
    }
    const e = err as { message?: string; code?: string };
    console.error(`checkstand: ${e.message ?? String(err)}`);
    process.exit(1);
  }
}
