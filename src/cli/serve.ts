/**
 * `checkstand start` and `checkstand serve`: the API (with the worker and the sandbox for
 * `start`), the demo on an empty database, the banner on every start, and the control socket the
 * CLI's token commands use while this process holds the embedded database.
 */
import cluster from 'node:cluster';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import { type Config, loadConfig } from '../app/config.ts';
import { databaseLocation, type Runtime, StartupError, openRuntime } from '../app/runtime.ts';
import type { DemoSeed } from '../app/seed.ts';
import { buildServer } from '../app/server.ts';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { tokenView } from '../modules/teams/service.ts';
import { startWorker } from '../worker/worker.ts';
import { banner, type PrintedToken } from './banner.ts';
import { API_CHILD, applyHeapGrowth, CLUSTER_CHILD_ENV, resolveProcessCount, superviseApiProcesses, WORKER_CHILD } from './cluster.ts';
import { type ControlServer, startControlServer } from './control.ts';

/** The name of the token `start` prints for the demo team. */
export const DEMO_TOKEN = 'demo';

/**
 * A long-running process outlives database outages: a connection error that escaped every caller
 * (a promise nobody awaited) is logged, not fatal. Anything else still ends the process, as
 * Node does by default, so a real bug is not left running in an unknown state.
 */
export function surviveDatabaseOutages(log: Logger): void {
  process.on('unhandledRejection', (err) => {
    if (isDatabaseUnavailable(err)) {
      log.warn({ err: { message: (err as Error).message } }, 'background database call failed: database unavailable');
      return;
    }
    log.fatal({ err }, 'unhandled promise rejection');
    process.exit(1);
  });
}

/** A port another process holds, said with the setting that chooses it. */
export function portError(err: unknown, setting: string, host: string, port: number): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return new StartupError(`port ${port} on ${host} (${setting}) is already in use by another process: stop it, or set ${setting} to a free port`);
  if (code === 'EACCES') return new StartupError(`port ${port} on ${host} (${setting}) needs privileges this user does not have: set ${setting} to 1024 or above`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new StartupError(`cannot listen on ${host} (${setting === 'PORT' ? 'HOST' : 'SANDBOX_HOST'}): no such address on this machine`);
  return err;
}

/**
 * Takes the API port before anything is written, so a busy port fails the start before the demo is
 * seeded; released just before Fastify listens on it. PORT=0 (any free port) needs no check.
 * A client that connects meanwhile (a health check polling for the start) is hung up on at once:
 * a held connection would keep `close()` from finishing, and the start would wait for it forever.
 */
async function claimPort(host: string, port: number): Promise<net.Server | undefined> {
  if (port === 0) return undefined;
  const probe = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (err) => reject(portError(err, 'PORT', host, port)));
    probe.listen({ host, port, exclusive: true }, () => resolve());
  });
  return probe;
}

/**
 * What `start` keeps in `<data dir>/demo.json` (embedded database only): the demo's ids (the
 * demo funnel reads them), and which token the first start made and whether it was printed.
 */
interface DemoState extends Omit<DemoSeed, 'token' | 'owner_password'> {
  token_printed?: boolean;
}

function demoFile(dataDir: string): string {
  return path.join(dataDir, 'demo.json');
}

function readDemoState(dataDir: string): DemoState | undefined {
  try {
    return JSON.parse(fs.readFileSync(demoFile(dataDir), 'utf8')) as DemoState;
  } catch {
    return undefined;
  }
}

function writeDemoState(dataDir: string, state: DemoState): void {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = demoFile(dataDir);
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(state, null, 2) + '\n');
  fs.renameSync(`${file}.tmp`, file);
}

function databaseLabel(config: Config): string {
  if (!config.databaseUrl) return `embedded database in ${config.dataDir}`;
  const where = databaseLocation(config.databaseUrl);
  if (!where) return 'PostgreSQL';
  return where.socket ? `PostgreSQL on the socket in ${where.host} (port ${where.port}), database ${where.database}` : `PostgreSQL at ${where.host}:${where.port}/${where.database}`;
}

/**
 * A debug setting for checking that requests reach several API processes: every answer carries
 * `x-checkstand-pid`. Off by default (a pid tells a caller nothing it needs).
 */
const PID_HEADER = 'x-checkstand-pid';
function pidHeaderWanted(): boolean {
  return /^(1|true|yes|on)$/i.test(process.env.CHECKSTAND_DEBUG_PID_HEADER ?? '');
}

export interface ServeOptions {
  worker: boolean;
  seedIfEmpty: boolean;
  sandbox: boolean;
  /** `start`: the demo team's 60 days of history (src/app/demo-history.ts), in the background once the server listens, unless false (`--no-demo-history`) or CHECKSTAND_DEMO_HISTORY=0. */
  demoHistory?: boolean;
  /** `checkstand serve`: `--processes`, or 'auto' (SERVE_PROCESSES, else the production default). Unset (`start`): one process. */
  processes?: number | 'auto';
}

export async function serve(opts: ServeOptions): Promise<void> {
  const config = loadConfig();
  // A child of `serve --processes N`: the API alone; the primary owns the port claim, the
  // migrations, the banner and the worker.
  if (cluster.isWorker && process.env[CLUSTER_CHILD_ENV] === API_CHILD) return serveOne({ ...opts, worker: false, seedIfEmpty: false, sandbox: false }, config, true);
  // The outbox worker's child of `serve --processes N --with-worker`: what `checkstand worker` runs.
  if (cluster.isWorker && process.env[CLUSTER_CHILD_ENV] === WORKER_CHILD) return (await import('./commands.ts')).worker();
  if (opts.processes !== undefined) {
    const n = resolveProcessCount(opts.processes === 'auto' ? undefined : opts.processes, process.env);
    if (n.count > 1 && !config.databaseUrl) {
      if (n.explicit) {
        throw new StartupError(
          `${n.setting} needs PostgreSQL (DATABASE_URL): the embedded database in ${config.dataDir} has one owner process; run one API process (--processes 1, or unset SERVE_PROCESSES) or set DATABASE_URL`,
        );
      }
    } else if (n.count > 1) {
      return servePrimary(opts, config, n.count);
    }
  }
  return serveOne(opts, config, false);
}

/**
 * The primary of `serve --processes N`: claims the port (a busy one fails the start before
 * anything else), applies the migrations once, releases the port and forks the N API processes
 * that share it, prints the banner once they all listen, and stops them all on SIGTERM/SIGINT.
 * `--with-worker` forks one more child that runs the outbox worker, once: not in every API process
 * (one worker per `serve`, however many API processes). It runs with the API processes' V8 flags
 * (the smaller young generation, which V8 reads only at a process's start: the primary, started by
 * the user, cannot give it to itself); run in the primary, the worker held its process at 211–245 MB
 * RSS under the bench's load (bench/README.md, twenty-eighth round). The primary keeps no database
 * connection once the migrations are applied.
 */
async function servePrimary(opts: ServeOptions, config: Config, count: number): Promise<void> {
  const claimed = await claimPort(config.host, config.port);
  const release = () => new Promise((r) => (claimed ? claimed.close(r) : r(undefined)));
  let rt: Runtime | undefined;
  try {
    rt = await openRuntime({ config });
  } catch (err) {
    await release();
    throw err;
  }
  const { ctx, log } = rt;
  const storeKind = ctx.store.kind;
  await rt.close();
  await release();

  const { port, processes } = await superviseApiProcesses(count, log, { withWorker: opts.worker });
  const workerPid = processes.workerPid();
  const baseUrl = config.publicBaseUrl ?? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;
  log.info({ url: baseUrl, database: storeKind, processes: processes.pids(), worker: workerPid !== undefined, worker_pid: workerPid ?? null, code: runningCode() }, 'checkstand serving');
  process.stdout.write(banner({ baseUrl, database: databaseLabel(config), demo: false }) + '\n');
  process.stdout.write(`  Processes    ${count} API processes (pids ${processes.pids().join(', ')}${workerPid ? `; the worker, pid ${workerPid}` : ''}; this one, ${process.pid}, supervises)\n\n`);

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    await processes.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

async function serveOne(opts: ServeOptions, config: Config, clusterChild: boolean): Promise<void> {
  // The ports first: a busy one fails the start before the database is opened or anything written.
  const cleanups: Array<() => Promise<unknown>> = [];
  let rt: Runtime | undefined;
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => {});
    await rt?.close().catch(() => {});
  };
  try {
    // What only `start` uses (the sandbox, the demo, the embedded database's first run) is loaded
    // only when it runs: an API process of `serve` on PostgreSQL does not hold it in memory.
    const sandbox = opts.sandbox ? await startSandboxFromEnv() : undefined;
    if (sandbox) cleanups.push(() => sandbox.close());
    // A cluster child shares the port the primary claimed and released: it claims nothing, and
    // the primary has applied the migrations.
    const claimed = clusterChild ? undefined : await claimPort(config.host, config.port);
    cleanups.push(() => new Promise((r) => (claimed ? claimed.close(r) : r(undefined))));

    if (!config.databaseUrl) {
      const { createEmbeddedDatabase, embeddedDatabaseMissing } = await import('./embedded-init.ts');
      if (embeddedDatabaseMissing(config)) await createEmbeddedDatabase();
    }
    rt = await openRuntime({ config, migrate: !clusterChild });
    const { ctx, log } = rt;
    surviveDatabaseOutages(log);
    // `serve --processes 1` on PostgreSQL serves the API in this process (a child has the flags already).
    if (!clusterChild && opts.processes !== undefined && config.databaseUrl) applyHeapGrowth(log, 'one API process');
    const embedded = ctx.store.kind === 'pglite';
    if (sandbox) log.info({ url: sandbox.url }, 'provider sandbox serving (NMI-compatible card gateway)');

    // The demo: seeded on an empty database; its token is printed once the server listens.
    let seed: DemoSeed | undefined;
    let state = opts.seedIfEmpty && embedded ? readDemoState(config.dataDir) : undefined;
    let printed: PrintedToken | undefined;
    if (opts.seedIfEmpty && (await ctx.services.teams.listTeams()).length === 0) {
      const { seedDemo } = await import('../app/seed.ts');
      seed = await seedDemo(ctx, { sandboxUrl: sandbox?.url, log });
      const { token: _token, owner_password: _password, ...ids } = seed;
      state = { ...ids, token_printed: false };
      // The ids (never the token) for the demo funnel on later starts and the README's quickstart.
      // Only on the embedded database: on PostgreSQL nothing is written in the data dir.
      if (embedded) writeDemoState(config.dataDir, state);
      printed = { secret: seed.token, teamId: seed.team_id, owner: { email: seed.owner_email, password: seed.owner_password } };
    }

    const app = await buildServer(ctx, log);
    cleanups.push(() => app.close());
    // Demo funnel (web/demo) on `npm start`: /demo, with a fresh `demo-funnel` token of the demo team held server-side, never printed.
    const demoFunnel = opts.seedIfEmpty ? await import('../../web/demo/funnel.ts') : undefined;
    const demo = demoFunnel ? await demoFunnel.demoFunnelOptions(ctx, seed) : undefined;
    if (demo) demoFunnel!.enableDemoFunnel(app, demo);
    if (pidHeaderWanted()) app.addHook('onRequest', async (_req, reply) => void reply.header(PID_HEADER, String(process.pid)));
    await new Promise((r) => (claimed ? claimed.close(r) : r(undefined)));
    try {
      await app.listen({ host: config.host, port: config.port });
    } catch (err) {
      throw portError(err, 'PORT', config.host, config.port);
    }
    const address = app.server.address();
    const port = address && typeof address === 'object' ? address.port : config.port;
    const baseUrl = config.publicBaseUrl ?? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;

    // A start that made the demo's token but stopped before printing it (port busy, killed):
    // that token was never seen, so it is revoked and a new one printed instead.
    if (!printed && state && state.token_printed === false && state.team_id) {
      const old = state.token_id ? (await ctx.services.teams.listTokens(state.team_id)).find((t) => t.id === state!.token_id) : undefined;
      if (old && !old.revoked_at) await ctx.services.teams.revokeToken(old.id);
      const issued = await ctx.services.teams.createToken(state.team_id, DEMO_TOKEN);
      printed = { secret: issued.secret, teamId: state.team_id, replaces: state.token_id ?? 'the unprinted demo token' };
      state = { ...state, token_id: issued.token.id };
    }

    const worker = opts.worker ? startWorker(ctx, log, { withApi: true }) : undefined;
    if (worker) cleanups.push(() => worker.stop());
    const control = embedded ? await startControlServer(config.dataDir, controlHandlers(rt, baseUrl)) : undefined;
    if (control && 'skipped' in control) log.warn({ reason: control.skipped }, 'no control socket: `checkstand token` commands cannot reach this process');
    const socket = control && !('skipped' in control) ? (control as ControlServer) : undefined;
    if (socket) cleanups.push(() => socket.close());

    log.info({ url: baseUrl, database: ctx.store.kind, data_dir: embedded ? config.dataDir : undefined, code: runningCode() }, 'checkstand serving');
    if (!clusterChild) process.stdout.write(
      banner({
        baseUrl,
        database: databaseLabel(rt.config),
        sandboxUrl: sandbox?.url,
        demo: Boolean(demo),
        demoTeamId: state?.team_id,
        token: printed,
        controlSocket: socket?.path,
        seed: printed && state ? state : undefined,
      }) + '\n',
    );
    if (printed && state && embedded) writeDemoState(config.dataDir, { ...state, token_printed: true });
    const demoHistory = opts.demoHistory !== undefined && sandbox && state?.gateway_id && !clusterChild ? await import('../app/demo-history.ts') : undefined;
    if (demoHistory && demoHistory.demoHistoryWanted(opts.demoHistory!)) {
      const history = demoHistory.startDemoHistory(ctx, state!, { sandboxUrl: sandbox!.url, log, progress: demoHistoryProgress() });
      cleanups.push(() => history.stop());
    }

    let closing = false;
    const shutdown = async (signal: string) => {
      if (closing) return;
      closing = true;
      log.info({ signal }, 'shutting down');
      await ctx.services.mail.close();
      await cleanup();
      process.exit(0);
    };
    process.on('SIGINT', () => void shutdown('SIGINT'));
    process.on('SIGTERM', () => void shutdown('SIGTERM'));
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** What this process runs: `build` (the bundle of scripts/build-server.mjs) or `sources` (through tsx), as bin/checkstand.js decided. */
function runningCode(): string {
  return process.env.CHECKSTAND_CODE ?? 'sources';
}

/** The provider sandbox of `start` (SANDBOX_HOST, SANDBOX_PORT), a busy port said with its setting. */
async function startSandboxFromEnv() {
  const { sandboxOptionsFromEnv, startSandbox } = await import('../sandbox/server.ts');
  const o = sandboxOptionsFromEnv();
  return startSandbox(o).catch((err: unknown) => Promise.reject(portError(err, 'SANDBOX_PORT', o.host ?? '127.0.0.1', o.port ?? 0)));
}

/** The demo history's lines on the terminal: when it starts, at each quarter, and when it is done. */
function demoHistoryProgress(): (done: number, total: number) => void {
  const started = Date.now();
  let shown = -1;
  return (done, total) => {
    const quarter = Math.floor((done * 4) / total);
    if (shown === -1) process.stdout.write(`  Demo history ${done === 0 ? 'creating' : 'finishing'} ${total} orders of the last 60 days in the background (--no-demo-history or CHECKSTAND_DEMO_HISTORY=0 to skip)\n`);
    else if (done === total) process.stdout.write(`  Demo history ${total} orders of the last 60 days: done in ${Math.round((Date.now() - started) / 1000)} s\n`);
    else if (quarter > shown) process.stdout.write(`  Demo history ${done}/${total} orders…\n`);
    shown = Math.max(shown, quarter);
  };
}

function controlHandlers(rt: Runtime, url: string) {
  const { teams } = rt.ctx.services;
  return {
    info: () => ({ pid: process.pid, url, data_dir: rt.config.dataDir }),
    createToken: async (teamId: string, name: string) => {
      const { token, secret } = await teams.createToken(teamId, name);
      rt.log.info({ token_id: token.id, team_id: teamId, name }, 'API token created through the control socket');
      return { ...tokenView(token), token: secret };
    },
    listTokens: async (teamId: string | undefined) => (await teams.listTokens(teamId)).map(tokenView),
    revokeToken: async (id: string) => {
      const t = await teams.revokeToken(id);
      rt.log.info({ token_id: id }, 'API token revoked through the control socket');
      return tokenView(t);
    },
    rotateToken: async (id: string, graceSeconds: number) => {
      const r = await teams.rotateToken(id, graceSeconds);
      rt.log.info({ token_id: id, new_token_id: r.token.id }, 'API token rotated through the control socket');
      return { ...tokenView(r.token), token: r.secret, replaced: tokenView(r.old) };
    },
  };
}
