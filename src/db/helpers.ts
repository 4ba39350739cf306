/** True when `err` is PostgreSQL's unique violation (23505) on the named constraint or index. */
export function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = err as { code?: unknown; constraint?: unknown } | null;
  return typeof e === 'object' && e !== null && e.code === '23505' && e.constraint === constraint;
}

/** Drops absent keys of a PATCH; null when it changes nothing. */
export function presentFields<T extends object>(patch: T): Partial<T> | null {
  const entries = Object.entries(patch).filter(([, v]) => v !== undefined);
  return entries.length === 0 ? null : (Object.fromEntries(entries) as Partial<T>);
}

/** True when `err` is a write's own guard refusing it (checkstand_expect_rows, migration 0020: SQLSTATE CS409). */
export function isGuardRefusal(err: unknown): boolean {
  const e = err as { code?: unknown } | null;
  return typeof e === 'object' && e !== null && e.code === 'CS409';
}

/**
 * The answer of work whose writes check themselves (a transaction of writes sent unanswered with its
 * COMMIT, each guarded by checkstand_expect_rows), or null when one of them refused (CS409): then
 * nothing of it committed, and the caller takes its ordinary way. Any other failure is thrown.
 */
export async function unlessRefused<T>(work: Promise<T>): Promise<T | null> {
  try {
    return await work;
  } catch (err) {
    if (isGuardRefusal(err)) return null;
    throw err;
  }
}
