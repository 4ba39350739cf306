/**
 * One drain of an outbox queue in a sliding window: claim a batch, start handling each claimed row,
 * and claim the next batch as soon as no more than `concurrency - batchSize` rows are still being
 * handled, not when the whole batch is done; again while a claim comes back full, so nothing due is
 * left behind when it returns (its Drainer is `drainsToTheEnd`). One slow receiver holds one slot,
 * not the queue behind it, and a worker that shares its thread (and the pool's line) with a busy
 * API keeps up with it: with whole batches awaited, the webhooks' drain fell behind the card funnel
 * at c=16 (bench/README.md, thirty-second round). `handle` must not reject (it logs its own
 * failures). Answers how many rows it claimed.
 */
export async function drainInWindow<T>(opts: {
  claim: () => Promise<T[]>;
  handle: (row: T) => Promise<void>;
  batchSize: number;
  /** Rows in flight at most; default 2 × batchSize, at least batchSize. */
  concurrency?: number;
}): Promise<number> {
  const room = Math.max(opts.concurrency ?? 2 * opts.batchSize, opts.batchSize) - opts.batchSize;
  const inFlight = new Set<Promise<void>>();
  let total = 0;
  for (;;) {
    const claimed = await opts.claim();
    total += claimed.length;
    for (const row of claimed) {
      const handled: Promise<void> = opts.handle(row).finally(() => inFlight.delete(handled));
      inFlight.add(handled);
    }
    if (claimed.length < opts.batchSize) break;
    while (inFlight.size > room) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  return total;
}
