/**
 * src/worker/window.ts: an outbox drain in a sliding window. The next batch is claimed while a
 * slow row is still being handled; never more than `concurrency` rows at once; the drain ends
 * with the first short claim and waits for every row it started.
 */
import { describe, expect, it } from 'vitest';
import { drainInWindow } from '../src/worker/window.ts';

/** A queue of `n` rows claimed `batch` at a time, as FOR UPDATE SKIP LOCKED hands them out. */
function queue(n: number) {
  const rows = Array.from({ length: n }, (_, i) => i);
  const claims: number[][] = [];
  return {
    claims,
    claim: (batch: number) => async () => {
      const got = rows.splice(0, batch);
      claims.push(got);
      return got;
    },
  };
}

describe('drainInWindow', () => {
  it('claims the next batch while a row of the first is still being handled', async () => {
    const q = queue(7);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const done: number[] = [];
    const drained = drainInWindow({
      claim: q.claim(2),
      handle: async (row) => {
        if (row === 0) await held;
        done.push(row);
      },
      batchSize: 2,
      concurrency: 4,
    });
    // Row 0 holds one slot; the window has room for another batch, then another once 2 and 3 are done.
    for (let i = 0; i < 50 && done.length < 5; i++) await new Promise((r) => setImmediate(r));
    expect(done).not.toContain(0);
    expect(done).toEqual(expect.arrayContaining([1, 2, 3]));
    release();
    expect(await drained).toBe(7);
    expect(done.sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // It stopped at the first short claim (row 6 alone), and claimed nothing after it.
    expect(q.claims.at(-1)).toEqual([6]);
  });

  it('never has more than `concurrency` rows in flight, and answers only when all are handled', async () => {
    const q = queue(53);
    let inFlight = 0;
    let most = 0;
    let handled = 0;
    const total = await drainInWindow({
      claim: q.claim(5),
      handle: async (row) => {
        inFlight++;
        most = Math.max(most, inFlight);
        for (let i = 0; i < row % 4; i++) await new Promise((r) => setImmediate(r));
        inFlight--;
        handled++;
      },
      batchSize: 5,
      concurrency: 12,
    });
    expect(total).toBe(53);
    expect(handled).toBe(53);
    expect(most).toBeLessThanOrEqual(12);
    expect(most).toBeGreaterThan(5); // more than one batch at a time
  });

  it('with concurrency at the batch size, claims again only once the batch is done', async () => {
    const q = queue(4);
    const order: string[] = [];
    await drainInWindow({
      claim: async () => {
        order.push('claim');
        return q.claim(2)();
      },
      handle: async (row) => {
        await new Promise((r) => setImmediate(r));
        order.push(`done ${row}`);
      },
      batchSize: 2,
      concurrency: 2,
    });
    expect(order).toEqual(['claim', 'done 0', 'done 1', 'claim', 'done 2', 'done 3', 'claim']);
  });
});
