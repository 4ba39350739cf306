import { type DoctorReport, type PaymentProvider, doctorReport } from '../../providers/provider.ts';
import type { ExtpayConnection } from '../../providers/extpay/types.ts';
import type { ExtpayEventsService } from '../inbound/extpay-events.ts';
import type { ConnectionsService } from './service.ts';

/**
 * The extpay connection doctor (`POST /v1/extpay-connections/{id}/doctor`): the provider's own checks
 * (its adapter's `diagnose`) against this install's webhook address. Writes nothing here; at the
 * provider it reads, and sends one test delivery.
 */
export class ConnectionDoctor {
  /** `webhookUrl`: this install's extpay webhook address, from configuration (PUBLIC_BASE_URL, else HOST:PORT), never from a request. */
  constructor(
    private readonly connections: ConnectionsService,
    private readonly events: ExtpayEventsService,
    private readonly provider: PaymentProvider<ExtpayConnection>,
    private readonly webhookUrl: string,
  ) {}

  async run(teamId: string, id: string): Promise<DoctorReport> {
    const { row, conn } = await this.connections.forDoctor(teamId, id);
    if (!this.provider.diagnose) return doctorReport([]);
    const checks = await this.provider.diagnose(conn, {
      webhookUrl: this.webhookUrl,
      testMode: row.environment === 'sandbox',
      // The receiver applies a delivery to the first connection of its company whose secret verifies it:
      // this connection's secret verified it if this one recorded it, or another of the team with the same secret did.
      recordedDelivery: async (eventId) => {
        const by = await this.events.recordedBy(teamId, eventId);
        if (by.includes(row.id)) return true;
        for (const other of by) {
          const o = await this.connections.forDoctor(teamId, other).catch(() => null);
          if (o && o.conn.webhookSecret && o.conn.webhookSecret === conn.webhookSecret) return true;
        }
        return false;
      },
    });
    return doctorReport(checks);
  }
}
