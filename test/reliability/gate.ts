/**
 * Open while the API is up (it answered /healthz), closed from the moment it is killed until it
 * answers again. Customers wait on it between retries, so a retry is spent on a server that can
 * answer instead of on connection refusals during a restart — however long a restart takes here.
 */
export class ServerGate {
  private opened = false;
  private released = false;
  private waiters: Array<() => void> = [];

  get isOpen(): boolean {
    return this.opened;
  }

  open(): void {
    this.opened = true;
    this.flush();
  }

  close(): void {
    this.opened = false;
  }

  /** For good: every wait returns at once from now on (the traffic is stopping). */
  release(): void {
    this.released = true;
    this.flush();
  }

  waitOpen(): Promise<void> {
    if (this.opened || this.released) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private flush(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const resolve of w) resolve();
  }
}
