import type { Logger } from 'pino';
import type { AppContext } from '../app/context.ts';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { ATTEMPT_GRACE_MS } from '../modules/checkout/recover.ts';

export interface Schedule {
  name: string;
  everyMs: number;
  run(ctx: AppContext, log: Logger): Promise<Record<string, unknown>>;
}

/**
 * A queue the worker drains: `drain` claims a batch of due rows (FOR UPDATE SKIP LOCKED plus a
 * lease, so several workers never take the same row), processes it and returns how many it
 * handled; 0 means nothing is due and the worker waits for a nudge or the poll interval.
 */
export interface Drainer {
  name: string;
  drain(ctx: AppContext, log: Logger): Promise<number>;
}

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
    name: 'purge-expired-idempotency-keys',
    everyMs: 15 * 60_000,
    async run(ctx) {
      return { deleted: await ctx.services.idempotency.purgeExpired() };
    },
  },
];

export interface RunningWorker {
  stop(): Promise<void>;
}

export interface WorkerOptions {
  schedules?: Schedule[];
  drainers?: Drainer[];
  /** How often an idle drainer looks for due work (it is also woken by in-process events). */
  pollMs?: number;
}

export function startWorker(ctx: AppContext, log: Logger, opts: WorkerOptions = {}): RunningWorker {
  const schedules = opts.schedules ?? SCHEDULES;
  const drainers = opts.drainers ?? ctx.drainers;
  const pollMs = opts.pollMs ?? 250;
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
      .then((result) => log.info({ schedule: s.name, ...result }, 'schedule ran'))
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

  const wakeups: Array<() => void> = [];
  const unsubscribe = ctx.services.events.onWork(() => wakeups.splice(0).forEach((w) => w()));
  const idle = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wakeups.push(() => {
        clearTimeout(t);
        resolve();
      });
    });

  for (const d of drainers) {
    const loop = (async () => {
      while (!stopped) {
        try {
          const n = await d.drain(ctx, log);
          if (n === 0) await idle(pollMs);
        } catch (err) {
          if (stopped) break;
          // While the database is away every drain fails the same way: the runtime logs the outage
          // once (and its end); each drainer waits and tries again, so it resumes on its own.
          if (isDatabaseUnavailable(err)) log.debug({ drainer: d.name }, 'drain waiting for the database');
          else log.error({ err, drainer: d.name }, 'drain failed');
          await idle(1000);
        }
      }
    })();
    running.add(loop);
  }

  log.info({ schedules: schedules.map((s) => s.name), drainers: drainers.map((d) => d.name) }, 'worker started');
  return {
    async stop() {
      stopped = true;
      unsubscribe();
      timers.forEach(clearInterval);
      wakeups.splice(0).forEach((w) => w());
      await Promise.allSettled([...running]);
    },
  };
}
