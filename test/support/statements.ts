import pg from 'pg';

/**
 * The text of every statement node-postgres is asked to send while `fn` runs, in order (BEGIN and
 * COMMIT included), from every client of this process.
 */
export async function statementsSent(fn: () => Promise<unknown>): Promise<string[]> {
  const texts: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const q = args[0] as string | { text?: string };
    texts.push(typeof q === 'string' ? q : (q?.text ?? ''));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    await fn();
  } finally {
    pg.Client.prototype.query = query;
  }
  return texts;
}
