import { type DoctorReport, type PaymentProvider, doctorReport } from '../../providers/provider.ts';
import type { ExtpayConnection } from '../../providers/extpay/types.ts';
import type { ConnectionsService } from './service.ts';

/**
 * The extpay connection doctor (`POST /v1/extpay-connections/{id}/doctor`): the provider's own checks
 * (its adapter's `diagnose`) against this install's webhook address. Writes nothing here; at the
 * provider it reads, and sends one test delivery.
 */
export class ConnectionDoctor {
  constructor(
    private readonly connections: ConnectionsService,
    private readonly provider: PaymentProvider<ExtpayConnection>,
  ) {}

  /** `baseUrl`: this install's public address (PUBLIC_BASE_URL, else the address the request came to). */
  async run(teamId: string, id: string, baseUrl: string): Promise<DoctorReport> {
    const { row, conn } = await this.connections.forDoctor(teamId, id);
    if (!this.provider.diagnose) return doctorReport([]);
    const checks = await this.provider.diagnose(conn, { webhookUrl: `${baseUrl.replace(/\/+$/, '')}/webhooks/extpay`, testMode: row.environment === 'sandbox' });
    return doctorReport(checks);
  }
}
