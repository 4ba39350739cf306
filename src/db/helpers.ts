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
