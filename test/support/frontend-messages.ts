import pg from 'pg';

/**
 * Counts the frontend protocol messages node-postgres clients write, by type byte (P Parse, B Bind,
 * D Describe, E Execute, H Flush, S Sync, Q simple query), while installed: every client's socket
 * (or the embedded database's stream) is wrapped the first time it sends a statement.
 */
export function frontendMessages(): { counts: Map<string, number>; count(type: string): number; install(): void; restore(): void } {
  const counts = new Map<string, number>();
  const wrapped = new WeakSet<object>();
  const query = pg.Client.prototype.query;
  return {
    counts,
    count: (type) => counts.get(type) ?? 0,
    install() {
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        const stream = (this as unknown as { connection?: { stream?: { write: (...a: unknown[]) => boolean } } }).connection?.stream;
        if (stream && !wrapped.has(stream)) {
          wrapped.add(stream);
          const write = stream.write;
          stream.write = function (this: unknown, ...a: unknown[]) {
            const chunk = a[0];
            if (Buffer.isBuffer(chunk) && chunk.length > 0) {
              const type = String.fromCharCode(chunk[0]!);
              counts.set(type, (counts.get(type) ?? 0) + 1);
            }
            return write.apply(this, a);
          };
        }
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
    },
    restore() {
      pg.Client.prototype.query = query;
    },
  };
}
