import type { Executor } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import * as repo from './repo.ts';

/** The UTC month a charge's volume counts in: 'YYYY-MM'. */
export function volumeMonth(now: Date): string {
  return now.toISOString().slice(0, 7);
}

/** [first instant of now's UTC month, first instant of the next one). */
export function utcMonth(now: Date): { from: Date; to: Date } {
  return {
    from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    to: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)),
  };
}

/**
 * A gateway's month-to-date volume as a hot counter (gateway_volume): a charge reserves its amount
 * in the statement that checks the cap, when its attempt opens, and gives it back if it declines.
 * Charges on an uncapped gateway reserve nothing; a cap that starts to apply first brings the
 * counter up to the month's approved sales.
 */
export class GatewayVolume {
  /** Approved sales through the gateway since the first instant of the current UTC month (the ledger's reading). */
  approvedThisMonth(db: Executor, teamId: string, gatewayId: string, now: Date = new Date()): Promise<number> {
    const { from, to } = utcMonth(now);
    return repo.sumApprovedSales(db, teamId, gatewayId, from, to);
  }

  /** Approved sales this UTC month (the month the caps count in) of each gateway, by id; a gateway with none is 0. */
  async approvedThisMonthByGateway(db: Executor, teamId: string, gatewayIds: readonly string[], now: Date = new Date()): Promise<Map<string, number>> {
    const { from, to } = utcMonth(now);
    return repo.sumApprovedSalesByGateway(db, teamId, gatewayIds, from, to);
  }

  /**
   * Reserves a charge's amount against the tightest of the gateway's and the router member's caps:
   * `month` is where it was reserved (null: no cap applies, nothing to reserve); `ok: false` when
   * the charge would pass a cap (the gateway is skipped). Concurrent charges never overrun a cap.
   */
  async reserve(db: Executor, teamId: string, gateway: Row<'gateways'>, memberCap: number | null, amount: number, now: Date = new Date()): Promise<{ ok: true; month: string | null } | { ok: false }> {
    const caps = [gateway.monthly_cap, memberCap].filter((x): x is number => x !== null);
    if (caps.length === 0) return { ok: true, month: null };
    const month = volumeMonth(now);
    const reserved = await repo.reserveVolume(db, teamId, gateway.id, month, amount, Math.min(...caps));
    return reserved === undefined ? { ok: false } : { ok: true, month };
  }

  release(db: Executor, teamId: string, gatewayId: string, month: string, amount: number): Promise<void> {
    return repo.releaseVolume(db, teamId, gatewayId, month, amount);
  }

  /** A cap starts to apply to these gateways: their counters catch up with this month's approved sales first. */
  async seed(db: Executor, teamId: string, gatewayIds: readonly string[], now: Date = new Date()): Promise<void> {
    for (const id of gatewayIds) await repo.seedVolume(db, teamId, id, volumeMonth(now), await this.approvedThisMonth(db, teamId, id, now));
  }
}
