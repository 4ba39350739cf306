/**
 * Where "now" comes from for anything that bills on a schedule (subscriptions, rebills, dunning).
 * Production reads the system clock; tests move a ManualClock forward instead of sleeping.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** The system clock shifted by an offset the test controls (time still passes between calls). */
export class ManualClock implements Clock {
  private offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advanceDays(days: number): void {
    this.offsetMs += days * 86_400_000;
  }

  advanceMs(ms: number): void {
    this.offsetMs += ms;
  }

  /** From now on `now()` reads `at` (plus the real time that passes after this call). */
  set(at: Date): void {
    this.offsetMs = at.getTime() - Date.now();
  }
}
