import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { AppContext } from '../app/context.ts';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { listen, type WorkListener } from '../db/listen.ts';
import { ANALYZE_EVERY_MS, analyzeChangedTables } from '../db/maintenance.ts';
import { ATTEMPT_GRACE_MS } from '../modules/checkout/recover.ts';

export interface Schedule {
  name: string;
  everyMs: number;
  run(ctx: AppContext, log: Logger): Promise<Record<string, unknown>>;
  /** A run that found nothing to do is logged at debug, not info (a schedule that runs every few seconds). */
  idle?(result: Record<string, unknown>): boolean;
}

/**
 * A queue the worker drains: `drain` claims a batch of due rows (FOR UPDATE SKIP LOCKED plus a
 * lease, so several workers never take the same row), processes it and returns how many it
 * handled; 0 means nothing is due and the worker waits for a wake-up or the poll interval.
 * The name is also the payload of the notification that wakes it (WORK_CHANNEL).
 */
export interface Drainer {
  name: string;
  drain(ctx: AppContext, log: Logger): Promise<number>;
  /**
   * One drain claims batch after batch until a claim comes back short (drainInWindow does): when
   * it returns, nothing was left due behind it, so a listening worker waits for the next
   * notification instead of claiming once more to find nothing. Without it, the drainer is
   * drained again until it answers 0.
   */
  drainsToTheEnd?: boolean;
}

/**
 * The channel the database notifies when a row becomes claimable (migration 0017's triggers on
 * webhook_deliveries, mail_messages and affiliate_postbacks), with the drainer's name as payload.
 * The NOTIFY runs in the transaction that creates the row and is delivered on its commit.
 */
export const WORK_CHANNEL = 'checkstand_work';

/** The safety net: how often an idle drainer looks for due work it was not told about (WORKER_POLL_MS). */
export const DEFAULT_POLL_MS = 5_000;

/**
 * How long a drainer woken for new work waits before it claims (WORKER_GATHER_MS), so the rows
 * committed meanwhile go out in the same claim. A worker in a process of its own is idle when a
 * notification comes, so without it every delivery and mail was claimed, and recorded, on its
 * own: on the card funnel with `serve --processes 2 --with-worker`, 25 ms took the worker's CPU
 * from 2.8–3.5 to 2.0–2.4 ms per funnel and PostgreSQL's commits from 10.9–11.1 to 9.2–9.4, for
 * ≈ 17 ms more webhook lag at the median (bench/README.md, twenty-ninth round). A worker that
 * shares its thread with the API does not wait (WorkerOptions.withApi).
 */
export const DEFAULT_GATHER_MS = 25;

/** Periodic housekeeping and the stuck-payment watchdog. */
export const SCHEDULES: Schedule[] = [
  {
    // Attempts whose provider answer was never recorded (a crash, a timeout): ask the provider.
    name: 'recover-unknown-attempts',
    everyMs: 60_000,
    async run(ctx) {
      return { ...(await ctx.services.checkout.reconcile.recoverUnknownAttempts(ATTEMPT_GRACE_MS)) };
    },
  },
  {
    // Redirected payments older than 15 minutes that neither Capture nor a webhook settled.
    name: 'reconcile-pending-payments',
    everyMs: 5 * 60_000,
    async run(ctx) {
      return ctx.services.checkout.reconcile.reconcilePendingPayments(15 * 60_000);
    },
  },
  {
    // The rebill queue: card subscriptions whose cycle (at the team's rebill hour) or dunning retry is
    // due, in claimed batches; at start it catches up on anything overdue. Externally managed ones are the provider's.
    name: 'rebill-due-subscriptions',
    everyMs: 60_000,
    async run(ctx, log) {
      return { ...(await ctx.services.checkout.rebill.runDue(log)) };
    },
  },
  {
    // Abandoned leads: unpaid past their campaign's delay, claimed one by one in batches (one
    // follow-up per lead whatever workers race); a follow-up more than a week late is not sent.
    name: 'follow-up-abandoned-leads',
    everyMs: 60_000,
    async run(ctx, log) {
      return { ...(await ctx.services.leads.runDue(log)) };
    },
  },
  {
    // Statistics of the tables that changed (src/db/maintenance.ts): what autovacuum does on
    // PostgreSQL (sooner, for a new database) and nothing else does on the embedded one.
    name: 'analyze-changed-tables',
    everyMs: ANALYZE_EVERY_MS,
    async run(ctx) {
      return { ...(await analyzeChangedTables(ctx.store)) };
    },
    idle: (result) => Array.isArray(result.analyzed) && result.analyzed.length === 0,
  },
  {
    name: 'purge-expired-idempotency-keys',
    everyMs: 15 * 60_000,
    async run(ctx) {
      return { deleted: await ctx.services.idempotency.purgeExpired() };
    },
  },
];

export interface RunningWorker {
  /** True while the worker's LISTEN connection hears the work channel's notifications (false with `listen: false`). */
  readonly listening: boolean;
  stop(): Promise<void>;
}

export interface WorkerOptions {
  schedules?: Schedule[];
  drainers?: Drainer[];
  /**
   * How often an idle drainer looks for due work it was not woken for (retries coming due, leases
   * of killed workers running out, a notification lost while the LISTEN connection was down).
   * Default WORKER_POLL_MS (config.workerPollMs), else 5 s.
   */
  pollMs?: number;
  /** LISTEN for the database's notifications (default true); without it any in-process nudge wakes every drainer. */
  listen?: boolean;
  /**
   * How long a drainer woken by a notification or a nudge waits before it claims, gathering what
   * is committed meanwhile into one claim. Not after a poll, nor at start. Default
   * WORKER_GATHER_MS (config.workerGatherMs), else DEFAULT_GATHER_MS (0 with `withApi`); 0 claims at once.
   */
  gatherMs?: number;
  /**
   * The worker shares its process, and its thread, with the API (`serve`/`start`): it does not
   * gather unless WORKER_GATHER_MS says so. The API's load batches its claims already (0.9
   * statements per funnel either way), and there a gathered burst of deliveries held the API's
   * requests: p99 per call 9–21 % higher in 3 of 3 pairs (bench/README.md, twenty-ninth round).
   */
  withApi?: boolean;
}

/** A worker's gather window: its option, else WORKER_GATHER_MS (`configured`), else DEFAULT_GATHER_MS for a worker of its own and none beside the API. */
export function gatherMsOf(opts: Pick<WorkerOptions, 'gatherMs' | 'withApi'>, configured: number | undefined): number {
  return opts.gatherMs ?? configured ?? (opts.withApi ? 0 : DEFAULT_GATHER_MS);
}

export function startWorker(ctx: AppContext, log: Logger, opts: WorkerOptions = {}): RunningWorker {
  const schedules = opts.schedules ?? SCHEDULES;
  const drainers = opts.drainers ?? ctx.drainers;
  const pollMs = opts.pollMs ?? ctx.config.workerPollMs ?? DEFAULT_POLL_MS;
  const gatherMs = gatherMsOf(opts, ctx.config.workerGatherMs);
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<unknown>>();
  let stopped = false;

  // A schedule whose last run is still going is not started again (a long rebill queue, a slow
  // recovery run): its next tick after it ends picks up whatever is left.
  const busy = new Set<string>();
  const tick = (s: Schedule) => {
    if (stopped || busy.has(s.name)) return;
    busy.add(s.name);
    const p = s
      .run(ctx, log)
      .then((result) => (s.idle?.(result) ? log.debug : log.info).call(log, { schedule: s.name, ...result }, 'schedule ran'))
      .catch((err) =>
        isDatabaseUnavailable(err)
          ? log.warn({ schedule: s.name }, 'schedule skipped: database unavailable (it runs again at its next interval)')
          : log.error({ err, schedule: s.name }, 'schedule failed'),
      )
      .finally(() => {
        busy.delete(s.name);
        running.delete(p);
      });
    running.add(p);
  };
  for (const s of schedules) {
    tick(s);
    timers.push(setInterval(() => tick(s), s.everyMs));
  }

  // Each drainer sleeps until woken: by a notification naming it, by an in-process nudge, by the
  // LISTEN connection (re)starting, or by the poll interval. `woken` remembers a wake-up that came
  // while it was draining, so it drains again instead of sleeping through it.
  interface Slot {
    woken: boolean;
    resolve: (() => void) | undefined;
  }
  const slots = new Map<string, Slot[]>();
  const wake = (slot: Slot) => {
    slot.woken = true;
    slot.resolve?.();
  };
  const wakeQueue = (name: string) => slots.get(name)?.forEach(wake);
  const wakeAll = () => slots.forEach((list) => list.forEach(wake));
  const idle = (slot: Slot, ms: number) =>
    new Promise<void>((resolve) => {
      if (slot.woken || stopped) return resolve();
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        slot.resolve = undefined;
        resolve();
      }
      slot.resolve = done;
    });

  let listener: WorkListener | undefined;
  if (opts.listen !== false && drainers.length > 0) {
    let warned = false;
    listener = listen(ctx.store, WORK_CHANNEL, {
      notify: (queue) => wakeQueue(queue),
      // Whatever was created while not listening was announced to nobody: one drain of every queue.
      listening: () => {
        if (warned) log.info('worker listening for work again');
        warned = false;
        wakeAll();
      },
      error: (err) => {
        if (!warned) log.warn({ err }, `worker lost its LISTEN connection; polling every ${pollMs} ms until it is back`);
        warned = true;
      },
    });
  }
  const listening = () => listener?.listening === true;
  const unsubscribe = ctx.services.events.onWork((queue) => {
    if (queue !== undefined) wakeQueue(queue);
    else if (!listening()) wakeAll();
  });

  for (const d of drainers) {
    const slot: Slot = { woken: false, resolve: undefined };
    slots.set(d.name, [...(slots.get(d.name) ?? []), slot]);
    const loop = (async () => {
      while (!stopped) {
        // Woken for new work (not a poll; a slot starts un-woken, so not the first drain either):
        // what is committed in the next gatherMs joins this claim.
        if (slot.woken && gatherMs > 0) {
          await sleep(gatherMs);
          if (stopped) break;
        }
        slot.woken = false;
        try {
          const n = await d.drain(ctx, log);
          if (stopped) break;
          if (slot.woken) continue;
          if (n > 0 && !(listening() && d.drainsToTheEnd)) continue;
          await idle(slot, pollMs);
        } catch (err) {
          if (stopped) break;
          // While the database is away every drain fails the same way: the runtime logs the outage
          // once (and its end); each drainer waits and tries again, so it resumes on its own.
          if (isDatabaseUnavailable(err)) log.debug({ drainer: d.name }, 'drain waiting for the database');
          else log.error({ err, drainer: d.name }, 'drain failed');
          slot.woken = false;
          await idle(slot, 1000);
        }
      }
    })();
    running.add(loop);
  }

  log.info({ schedules: schedules.map((s) => s.name), drainers: drainers.map((d) => d.name) }, 'worker started');
  return {
    get listening() {
      return listening();
    },
    async stop() {
      stopped = true;
      unsubscribe();
      timers.forEach(clearInterval);
      wakeAll();
      await Promise.allSettled([...running, listener?.close()]);
    },
  };
}
