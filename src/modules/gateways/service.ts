import { configCache } from '../../app/cache.ts';
import { invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { ListQuery } from '../../app/schemas.ts';
import { type Secrets, SealedValues } from '../../app/secrets.ts';
import type { Executor, Store } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { presentFields } from '../../db/helpers.ts';
import { CardLists } from './card-lists.ts';
import { listViews } from './pages.ts';
import * as repo from './repo.ts';
import { PaymentRouters, type RouterWithMembers } from './routers.ts';
import { GatewayVolume } from './volume.ts';
import type { CreateGateway, Gateway, UpdateGateway } from './schemas.ts';

export { orderMembers, type RouterMemberWithGateway, type RouterWithMembers, type RoutingStrategy } from './routers.ts';

export interface ListPage<T> {
  items: T[];
  has_more: boolean;
}

/** What a gateway adapter needs to talk to the provider, credentials decrypted. */
export interface GatewayAccount {
  baseUrl: string;
  credentials: Record<string, string>;
  testMode: boolean;
  descriptor: string | null;
}

export { utcMonth, volumeMonth } from './volume.ts';
/** For modules whose configuration names a gateway or payment orchestrator: checked in their write's transaction. */
export { assertOwnedRouting, type Reference, type RoutingReferences } from './references.ts';

/** Enough to recognise which key is stored, never enough to use it. */
function hintOf(value: string): string {
  return value.length >= 12 ? `…${value.slice(-4)}` : '…';
}

/** The team's gateways; its payment orchestrators and card lists live beside them (routers.ts, card-lists.ts). */
export class GatewaysService {
  /** Month-to-date volume: the cap counters charges reserve on, and the ledger's approved sales. */
  readonly volume = new GatewayVolume();
  readonly routers: PaymentRouters;
  readonly cardLists: CardLists;
  /** Gateway rows by (team, id), cached per process and dropped after each update here; monthly_cap is a limit, the volume it limits is never cached. */
  private readonly gateways;

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    private readonly opts: { publicBaseUrl: string } = { publicBaseUrl: 'http://127.0.0.1:3000' },
  ) {
    this.routers = new PaymentRouters(store, this.volume);
    this.cardLists = new CardLists(store, secrets);
    this.gateways = configCache<Readonly<Row<'gateways'>>>(store, 'gateways');
    this.credentials = new SealedValues(secrets, (plaintext) => Object.freeze(JSON.parse(plaintext) as Record<string, string>));
  }

  /** Gateways' credentials opened once per sealed value (a charge no longer decrypts them). */
  private readonly credentials: SealedValues<Readonly<Record<string, string>>>;

  // ---- for the payment core: it passes its own transaction (or the root handle outside one)

  /** Frozen and shared; at most the cache's TTL behind a change made by another process. */
  findGateway(db: Executor, teamId: string, id: string): Promise<Row<'gateways'> | undefined> {
    return this.gateways.get(`${teamId}\u0000${id}`, async () => {
      const row = await repo.findGateway(db, teamId, id);
      return row && Object.freeze(row);
    });
  }

  findRouter(db: Executor, teamId: string, id: string): Promise<RouterWithMembers | undefined> {
    return this.routers.find(db, teamId, id);
  }

  account(gateway: Row<'gateways'>): GatewayAccount {
    return {
      baseUrl: gateway.base_url,
      credentials: this.openCredentials(gateway),
      testMode: gateway.test_mode,
      descriptor: gateway.descriptor,
    };
  }

  /** Approved sales through the gateway since the first instant of the current UTC month; refunds are not subtracted. */
  monthToDateVolume(db: Executor, teamId: string, gatewayId: string, now: Date = new Date()): Promise<number> {
    return this.volume.approvedThisMonth(db, teamId, gatewayId, now);
  }

  /** The blacklist entry whose prefix the card number starts with (the longest, when several do). */
  isBinBlocked(db: Executor, teamId: string, pan: string): Promise<Row<'bin_blacklist'> | undefined> {
    return this.cardLists.isBinBlocked(db, teamId, pan);
  }

  isTestCard(db: Executor, teamId: string, pan: string): Promise<boolean> {
    return this.cardLists.isTestCard(db, teamId, pan);
  }

  // ---- gateways

  /** For the inbound webhook route only: the gateway named in the URL, whatever its team. */
  findGatewayForWebhook(id: string): Promise<Row<'gateways'> | undefined> {
    return this.store.run((db) => repo.findGatewayById(db, id));
  }

  gatewayView(r: Row<'gateways'>): Gateway {
    return {
      object: 'gateway',
      id: r.id,
      name: r.name,
      kind: r.kind,
      base_url: r.base_url,
      test_mode: r.test_mode,
      is_active: r.is_active,
      monthly_cap: r.monthly_cap,
      descriptor: r.descriptor,
      credentials_hint: this.credentialsHint(r),
      ...(r.kind === 'threeds' ? this.threeDsFields(r) : {}),
      created_at: r.created_at.toISOString(),
      updated_at: r.updated_at.toISOString(),
    };
  }

  async createGateway(teamId: string, input: CreateGateway): Promise<Gateway> {
    const row = await this.store.run((db) =>
      repo.insertGateway(db, {
        id: newId('gateway'),
        team_id: teamId,
        name: input.name,
        kind: input.kind,
        base_url: input.base_url,
        credentials: this.sealCredentials(input.credentials),
        test_mode: input.test_mode ?? (input.kind === 'threeds' && input.credentials.api_key.startsWith('sk_test_')),
        is_active: input.is_active,
        monthly_cap: input.monthly_cap ?? null,
        descriptor: input.descriptor ?? null,
      }),
    );
    return this.gatewayView(row);
  }

  async getGateway(teamId: string, id: string): Promise<Gateway> {
    const row = await this.store.run((db) => repo.findGateway(db, teamId, id));
    if (!row) throw notFound('Gateway');
    return this.gatewayView(row);
  }

  async updateGateway(teamId: string, id: string, patch: UpdateGateway): Promise<Gateway> {
    const fields = presentFields(patch);
    if (!fields) return this.getGateway(teamId, id);
    const { credentials, ...rest } = fields;
    if (credentials) {
      const current = await this.store.run((db) => repo.findGateway(db, teamId, id));
      if (!current) throw notFound('Gateway');
      const wanted = current.kind === 'nmi' ? 'security_key' : 'api_key';
      const foreign = current.kind === 'nmi' ? ['api_key', 'risk_sdk_key', 'webhook_secret'] : ['security_key'];
      if (!credentials[wanted]) throw invalid(`credentials.${wanted}`, `is required for a ${current.kind} gateway`);
      const wrong = foreign.find((k) => k in credentials);
      if (wrong) throw invalid(`credentials.${wrong}`, `is not a credential of a ${current.kind} gateway`);
    }
    const row = await this.store.transaction(async (trx) => {
      const updated = await repo.updateGateway(trx, teamId, id, { ...rest, ...(credentials ? { credentials: this.sealCredentials(credentials) } : {}) });
      if (updated && rest.monthly_cap != null) await this.volume.seed(trx, teamId, [id]);
      return updated;
    });
    this.gateways.delete(`${teamId}\u0000${id}`);
    this.routers.forgetAll();
    if (!row) throw notFound('Gateway');
    return this.gatewayView(row);
  }

  async listGateways(teamId: string, query: ListQuery): Promise<ListPage<Gateway>> {
    return listViews(this.store, 'gateways', teamId, query, (db, w) => repo.listGateways(db, teamId, w), (r) => this.gatewayView(r));
  }

  // ---- shared

  private threeDsFields(r: Row<'gateways'>) {
    let creds: Record<string, string> = {};
    try {
      creds = this.openCredentials(r);
    } catch {
      /* sealed under another key: shown as not configured */
    }
    return {
      webhook_url: `${this.opts.publicBaseUrl}/webhooks/gateways/${r.id}`,
      risk_sdk_key: creds.risk_sdk_key ?? null,
      webhook_secret_configured: Boolean(creds.webhook_secret),
    };
  }

  private sealCredentials(credentials: Record<string, string>): string {
    return this.secrets.encrypt(JSON.stringify(credentials));
  }

  private openCredentials(gateway: Row<'gateways'>): Readonly<Record<string, string>> {
    return this.credentials.get(gateway.credentials);
  }

  private credentialsHint(gateway: Row<'gateways'>): Record<string, string> {
    let credentials: Record<string, string>;
    try {
      credentials = this.openCredentials(gateway);
    } catch {
      // Sealed under another service key: the listing stays readable; charging through it fails loudly in account().
      return {};
    }
    return Object.fromEntries(Object.entries(credentials).map(([k, v]) => [k, hintOf(String(v))]));
  }
}

