/**
 * Counts the socket writes (one system call each) of node-postgres clients: the measure of round
 * trips to PostgreSQL, where statements sent together share one write (pg-driver.ts). Used by the
 * bench and the tests; nothing in the server calls it. A client without a socket (PGlite) is skipped.
 */
export function countSocketWrites(onWrite: () => void): (client: unknown) => void {
  const counted = new WeakSet<object>();
  return (client) => {
    const socket = (client as { connection?: { stream?: Record<string, unknown> } }).connection?.stream;
    if (!socket || typeof socket._writev !== 'function' || counted.has(socket)) return;
    counted.add(socket);
    for (const method of ['_write', '_writev'] as const) {
      const original = socket[method] as (...a: unknown[]) => unknown;
      socket[method] = function (this: unknown, ...a: unknown[]) {
        onWrite();
        return original.apply(this, a);
      };
    }
  };
}
