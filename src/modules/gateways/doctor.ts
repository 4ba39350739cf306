import type { Store } from '../../db/database.ts';
import { notFound } from '../../app/errors.ts';
import { type CardProviders, type DoctorReport, doctorReport } from '../../providers/provider.ts';
import type { GatewaysService } from './service.ts';

/**
 * The card gateway doctor (`POST /v1/gateways/{id}/doctor`): the gateway kind's own checks (its
 * provider's `diagnose`: NMI's key and Customer Vault; the 3-D Secure gateway's key, mode, risk SDK
 * key and webhook) against this install's address for the gateway's webhooks. Writes nothing here.
 */
export class GatewayDoctor {
  constructor(
    private readonly store: Store,
    private readonly gateways: GatewaysService,
    private readonly providers: CardProviders,
  ) {}

  /** The webhook address checked is the gateway record's `webhook_url` (from configuration), never the request's Host. */
  async run(teamId: string, id: string): Promise<DoctorReport> {
    const row = await this.store.run((db) => this.gateways.findGateway(db, teamId, id));
    if (!row) throw notFound('Gateway');
    const diagnose = this.providers[row.kind]?.diagnose;
    if (!diagnose) return doctorReport([{ name: 'supported', status: 'warn', message: `No doctor checks exist for ${row.kind} gateways.`, fix: 'Test the gateway with a test card.' }]);
    // NMI sends no webhooks: its record has no webhook_url and its checks do not read one.
    const webhookUrl = this.gateways.gatewayView(row).webhook_url ?? '';
    const checks = await diagnose(this.gateways.account(row), { webhookUrl, testMode: row.test_mode });
    return doctorReport(checks);
  }
}
