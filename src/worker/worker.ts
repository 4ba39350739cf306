import type { Logger } from 'pino';
import type { AppContext } from '../app/context.ts';

export interface Schedule {
  name: string;
  everyMs: number;
  run(ctx: AppContext): Promise<Record<string, unknown>>;
}

/** Periodic housekeeping. Later work adds the outbox drain and the nightly rebills here. */
export const SCHEDULES: Schedule[] = [
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

export function startWorker(ctx: AppContext, log: Logger, schedules: Schedule[] = SCHEDULES): RunningWorker {
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<unknown>>();
  let stopped = false;
  const tick = (s: Schedule) => {
    if (stopped) return;
    const p = s
      .run(ctx)
      .then((result) => log.info({ schedule: s.name, ...result }, 'schedule ran'))
      .catch((err) => log.error({ err, schedule: s.name }, 'schedule failed'))
      .finally(() => running.delete(p));
    running.add(p);
  };
  for (const s of schedules) {
    tick(s);
    timers.push(setInterval(() => tick(s), s.everyMs));
  }
  log.info({ schedules: schedules.map((s) => s.name) }, 'worker started');
  return {
    async stop() {
      stopped = true;
      timers.forEach(clearInterval);
      await Promise.allSettled([...running]);
    },
  };
}
