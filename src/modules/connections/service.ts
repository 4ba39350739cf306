import { configCache } from '../../app/cache.ts';
import { ApiError, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { iso, type ListQuery } from '../../app/schemas.ts';
import type { Secrets } from '../../app/secrets.ts';
import type { Executor, Store } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import { EXTPAY_API_VERSION_DATE, EXTPAY_CHECKOUT_PERMISSIONS, type ExtpayConnection, type ExtpayProviderAdapter, WHOP_API_BASE_URLS } from '../../providers/extpay/types.ts';
import * as repo from './repo.ts';

export interface CreateConnectionInput {
  name: string;
  api_key: string;
  company_id: string;
  environment: 'sandbox' | 'production';
  webhook_secret?: string | undefined;
  base_url?: string | undefined;
  api_version_date?: string | undefined;
}

export interface UpdateConnectionInput {
  name?: string | undefined;
  api_key?: string | undefined;
  webhook_secret?: string | null | undefined;
  base_url?: string | undefined;
  /** null: back to the adapter's default version. */
  api_version_date?: string | null | undefined;
}

/** The three outcomes of spec 2.7, as the API names them. */
export type ConnectionTestResult = 'connected' | 'cannot_create_checkouts' | 'failed_to_authenticate';

const TEST_MESSAGES: Record<ConnectionTestResult, string> = {
  connected: 'Connected: the key authenticates and can create checkouts.',
  cannot_create_checkouts: `Connected, but the key cannot create checkouts: give it the permissions ${EXTPAY_CHECKOUT_PERMISSIONS.join(', ')}.`,
  failed_to_authenticate: "Failed to authenticate: check the API key, the company ID, and that both belong to this connection's environment.",
};

function hint(value: string): string {
  return value.length >= 12 ? `…${value.slice(-4)}` : '…';
}

/**
 * External checkout provider connections (spec 2.7): team-level, several per team, created
 * Active; secrets sealed at rest. Create Order resolves one per spec 4.1 rule 8.
 */
export class ConnectionsService {
  /**
   * Live connections by (team, id), and by provider company for inbound webhooks: configuration,
   * cached per process (src/app/cache.ts) and dropped after each write here, so this process acts on
   * a change at once and others within the cache's TTL (README, "Caches").
   */
  private readonly live;
  private readonly byCompany;

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    private readonly adapter: ExtpayProviderAdapter,
  ) {
    this.live = configCache<Readonly<Row<'extpay_connections'>>>(store, 'extpay_connections');
    this.byCompany = configCache<{ rows: ReadonlyArray<Readonly<Row<'extpay_connections'>>> }>(store, 'extpay_connections_by_company');
  }

  /** After a write to a connection: this process reads it again (and every company's list, which a new or deleted one changes). */
  private forget(teamId: string, id: string): void {
    this.live.delete(`${teamId}\u0000${id}`);
    this.byCompany.clear();
  }

  view(r: Row<'extpay_connections'>) {
    const apiKey = this.secrets.decrypt(r.api_key);
    return {
      object: 'extpay_connection' as const,
      id: r.id,
      type: 'extpay' as const,
      name: r.name,
      environment: r.environment,
      test_mode: r.environment === 'sandbox',
      company_id: r.company_id,
      base_url: r.base_url,
      api_key_hint: hint(apiKey),
      webhook_secret_configured: r.webhook_secret !== null,
      api_version_date: r.api_version_date ?? EXTPAY_API_VERSION_DATE,
      status: r.is_active ? ('active' as const) : ('inactive' as const),
      capabilities: { refunds: true, voids: true, upsells: true },
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
    };
  }

  /** Decrypted, for adapter calls and webhook verification. */
  connection(r: Row<'extpay_connections'>): ExtpayConnection {
    return {
      baseUrl: r.base_url,
      apiKey: this.secrets.decrypt(r.api_key),
      companyId: r.company_id,
      environment: r.environment,
      webhookSecret: r.webhook_secret ? this.secrets.decrypt(r.webhook_secret) : null,
      apiVersionDate: r.api_version_date ?? null,
    };
  }

  async create(teamId: string, input: CreateConnectionInput) {
    const row = await this.store.run((db) =>
      repo.insertConnection(db, {
        id: newId('extpayConnection'),
        team_id: teamId,
        name: input.name,
        environment: input.environment,
        company_id: input.company_id,
        base_url: input.base_url ?? WHOP_API_BASE_URLS[input.environment],
        api_key: this.secrets.encrypt(input.api_key),
        webhook_secret: input.webhook_secret ? this.secrets.encrypt(input.webhook_secret) : null,
        ...(input.api_version_date ? { api_version_date: input.api_version_date } : {}),
      }),
    );
    this.forget(teamId, row.id);
    return this.view(row);
  }

  async get(teamId: string, id: string) {
    const row = await this.store.run((db) => repo.findConnection(db, teamId, id));
    if (!row) throw notFound('Connection');
    return this.view(row);
  }

  async update(teamId: string, id: string, input: UpdateConnectionInput) {
    const patch: Parameters<typeof repo.updateConnection>[3] = {};
    if (input.name !== undefined) patch.name = input.name;
    if (input.base_url !== undefined) patch.base_url = input.base_url;
    if (input.api_key !== undefined) patch.api_key = this.secrets.encrypt(input.api_key);
    if (input.api_version_date !== undefined) patch.api_version_date = input.api_version_date;
    if (input.webhook_secret !== undefined) patch.webhook_secret = input.webhook_secret === null ? null : this.secrets.encrypt(input.webhook_secret);
    const row = await this.store.run((db) => repo.updateConnection(db, teamId, id, patch));
    this.forget(teamId, id);
    if (!row) throw notFound('Connection');
    return this.view(row);
  }

  async setActive(teamId: string, id: string, active: boolean) {
    const row = await this.store.run((db) => repo.updateConnection(db, teamId, id, { is_active: active }));
    this.forget(teamId, id);
    if (!row) throw notFound('Connection');
    return this.view(row);
  }

  /** Deleted connections disappear from lists and from resolution; their rows stay for history. */
  async remove(teamId: string, id: string) {
    const row = await this.store.run((db) => repo.updateConnection(db, teamId, id, { deleted_at: new Date(), is_active: false }));
    this.forget(teamId, id);
    if (!row) throw notFound('Connection');
    return { ...this.view(row), deleted: true };
  }

  async list(teamId: string, q: ListQuery): Promise<Page<ReturnType<ConnectionsService['view']>>> {
    return this.store.run((db) =>
      listPage(db, 'extpay_connections', teamId, q, (afterSeq) => repo.listConnections(db, teamId, { limit: q.limit, afterSeq }), (r) => this.view(r)),
    );
  }

  /**
   * Asks the provider; one of exactly three outcomes as `status` (`result` is its older name), with the
   * checkout permissions the key lacks named when the provider said which. Unreachable: a 502.
   */
  async test(teamId: string, id: string): Promise<{ status: ConnectionTestResult; result: ConnectionTestResult; message: string; missing_permissions: string[] }> {
    const row = await this.store.run((db) => repo.findConnection(db, teamId, id));
    if (!row) throw notFound('Connection');
    const r = await this.adapter.testConnection(this.connection(row));
    if (r.kind === 'error') throw new ApiError('gateway_unavailable', `The provider could not be asked: ${r.message}`);
    const missing = r.kind === 'cannot_create_checkouts' ? r.missing : [];
    const message =
      r.kind === 'cannot_create_checkouts' && missing.length > 0
        ? r.exact
          ? `Connected, but the key cannot create checkouts: it lacks ${missing.join(', ')}.`
          : `Connected, but the key cannot create checkouts: the provider refused without naming the permission; it lacks one or more of ${missing.join(', ')}.`
        : r.kind === 'failed_to_authenticate' && r.cause === 'api_version'
          ? `Failed: the provider refused the pinned Api-Version-Date (${row.api_version_date ?? 'default'}) before checking the key: ${r.message} Clear the connection's api_version_date, or pin a version the provider lists.`
          : TEST_MESSAGES[r.kind];
    return { status: r.kind, result: r.kind, message, missing_permissions: missing };
  }

  /** A live connection of the team, decrypted for a provider call (the doctor), with its row. */
  async forDoctor(teamId: string, id: string): Promise<{ row: Row<'extpay_connections'>; conn: ExtpayConnection }> {
    const row = await this.store.run((db) => repo.findConnection(db, teamId, id));
    if (!row) throw notFound('Connection');
    return { row, conn: this.connection(row) };
  }

  /**
   * Inbound webhooks (spec 6.1): the connections a delivery may come from, named by the payload's
   * company and, when the sender says, environment. Deactivated connections still receive the
   * events of payments they started; deleted ones do not.
   */
  async findForWebhook(companyId: string, environment?: 'sandbox' | 'production'): Promise<ReadonlyArray<Readonly<Row<'extpay_connections'>>>> {
    const found = await this.byCompany.get(`${companyId}\u0000${environment ?? ''}`, async () => ({
      rows: Object.freeze((await this.store.run((db) => repo.findByCompany(db, companyId, environment))).map((r) => Object.freeze(r))),
    }));
    return found!.rows;
  }

  /** A live connection by id (for follow-ups of a payment it started, whatever its Active flag). Frozen and shared. */
  findLive(db: Executor, teamId: string, id: string): Promise<Readonly<Row<'extpay_connections'>> | undefined> {
    return this.live.get(`${teamId}\u0000${id}`, async () => {
      const row = await repo.findConnection(db, teamId, id);
      return row && Object.freeze(row);
    });
  }

  /**
   * Spec 4.1 rule 8: a pinned connection must exist, be live and Active; without a pin any Active
   * one serves (the oldest, so the choice is stable); none → "provider is not configured".
   */
  async resolveForOrder(db: Executor, teamId: string, pinnedId: string | undefined): Promise<Row<'extpay_connections'>> {
    if (pinnedId) {
      const pinned = await this.findLive(db, teamId, pinnedId);
      if (!pinned || !pinned.is_active) throw new ApiError('provider_not_configured');
      return pinned;
    }
    const [first] = await repo.findActiveConnections(db, teamId);
    if (!first) throw new ApiError('provider_not_configured');
    return first;
  }
}
