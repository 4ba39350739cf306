import { ApiError, type FieldError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { ListQuery } from '../../app/schemas.ts';
import type { Secrets } from '../../app/secrets.ts';
import type { Executor, Store } from '../../db/database.ts';
import { type ListableTable, listPage } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import * as repo from './repo.ts';
import { GatewayVolume } from './volume.ts';
import type {
  BinBlock,
  CreateBinBlock,
  CreateGateway,
  CreateRouter,
  CreateTestCard,
  Gateway,
  Router,
  RouterMemberInput,
  TestCard,
  UpdateGateway,
  UpdateRouter,
} from './schemas.ts';
import { isUniqueViolation, presentFields } from '../../db/helpers.ts';

export interface ListPage<T> {
  items: T[];
  has_more: boolean;
}

export type RoutingStrategy = 'priority' | 'weighted';

export type RouterMemberWithGateway = Row<'payment_router_members'> & { gateway: Row<'gateways'> };

export interface RouterWithMembers {
  router: Row<'payment_routers'>;
  /** By ascending priority, then id. */
  members: RouterMemberWithGateway[];
}

/** What a gateway adapter needs to talk to the provider, credentials decrypted. */
export interface GatewayAccount {
  baseUrl: string;
  credentials: Record<string, string>;
  testMode: boolean;
  descriptor: string | null;
}

const TEST_CARD_HASH_PURPOSE = 'test-card';

/**
 * The order in which a router tries its members. `priority`: ascending priority, ties by
 * weight descending (the input order breaks any remaining tie). `weighted`: a random
 * permutation where each next member is drawn with probability weight / remaining weight.
 */
export function orderMembers<T extends { priority: number; weight: number }>(strategy: RoutingStrategy, members: readonly T[], random: () => number = Math.random): T[] {
  if (strategy === 'priority') {
    return members
      .map((m, i) => ({ m, i }))
      .sort((a, b) => a.m.priority - b.m.priority || b.m.weight - a.m.weight || a.i - b.i)
      .map(({ m }) => m);
  }
  const pool = [...members];
  const ordered: T[] = [];
  while (pool.length > 0) {
    const total = pool.reduce((s, m) => s + m.weight, 0);
    let draw = random() * total;
    let pick = pool.length - 1;
    for (let i = 0; i < pool.length; i++) {
      draw -= pool[i]!.weight;
      if (draw < 0) {
        pick = i;
        break;
      }
    }
    ordered.push(...pool.splice(pick, 1));
  }
  return ordered;
}

export { utcMonth, volumeMonth } from './volume.ts';

function digitsOf(pan: string): string {
  return pan.replace(/\D/g, '');
}

/** Enough to recognise which key is stored, never enough to use it. */
function hintOf(value: string): string {
  return value.length >= 12 ? `…${value.slice(-4)}` : '…';
}

// ---- the one place rows become what the API shows (never team_id, seq, credentials or card hashes)

export function routerView(r: Row<'payment_routers'>, members: Row<'payment_router_members'>[]): Router {
  return {
    object: 'payment_orchestrator',
    id: r.id,
    name: r.name,
    strategy: r.strategy,
    max_attempts: r.max_attempts,
    is_active: r.is_active,
    members: members.map((m) => ({ id: m.id, gateway_id: m.gateway_id, priority: m.priority, weight: m.weight, monthly_cap: m.monthly_cap })),
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

export function binBlockView(r: Row<'bin_blacklist'>): BinBlock {
  return { object: 'bin_blacklist_entry', id: r.id, prefix: r.prefix, reason: r.reason, created_at: r.created_at.toISOString() };
}

export function testCardView(r: Row<'test_cards'>): TestCard {
  return { object: 'test_card', id: r.id, last4: r.last4, label: r.label, created_at: r.created_at.toISOString() };
}

export class GatewaysService {
  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    private readonly opts: { publicBaseUrl: string } = { publicBaseUrl: 'http://127.0.0.1:3000' },
  ) {}

  // ---- for the payment core: it passes its own transaction (or the root handle outside one)

  findGateway(db: Executor, teamId: string, id: string): Promise<Row<'gateways'> | undefined> {
    return repo.findGateway(db, teamId, id);
  }

  async findRouter(db: Executor, teamId: string, id: string): Promise<RouterWithMembers | undefined> {
    const router = await repo.findRouter(db, teamId, id);
    if (!router) return undefined;
    const members = await repo.listRouterMembers(db, teamId, [router.id]);
    const gateways = new Map((await repo.findGateways(db, teamId, members.map((m) => m.gateway_id))).map((g) => [g.id, g]));
    return {
      router,
      // A member's gateway is always the team's (checked on write, and gateways are never deleted).
      members: members.flatMap((m) => {
        const gateway = gateways.get(m.gateway_id);
        return gateway ? [{ ...m, gateway }] : [];
      }),
    };
  }

  account(gateway: Row<'gateways'>): GatewayAccount {
    return {
      baseUrl: gateway.base_url,
      credentials: this.openCredentials(gateway),
      testMode: gateway.test_mode,
      descriptor: gateway.descriptor,
    };
  }

  /** Month-to-date volume: the cap counters charges reserve on, and the ledger's approved sales. */
  readonly volume = new GatewayVolume();

  /** Approved sales through the gateway since the first instant of the current UTC month; refunds are not subtracted. */
  monthToDateVolume(db: Executor, teamId: string, gatewayId: string, now: Date = new Date()): Promise<number> {
    return this.volume.approvedThisMonth(db, teamId, gatewayId, now);
  }

  /** The blacklist entry whose prefix the card number starts with (the longest, when several do). */
  isBinBlocked(db: Executor, teamId: string, pan: string): Promise<Row<'bin_blacklist'> | undefined> {
    const digits = digitsOf(pan);
    const candidates = [6, 7, 8].filter((n) => digits.length >= n).map((n) => digits.slice(0, n));
    return repo.findBinBlock(db, teamId, candidates);
  }

  async isTestCard(db: Executor, teamId: string, pan: string): Promise<boolean> {
    const hash = this.secrets.keyedHash(TEST_CARD_HASH_PURPOSE, digitsOf(pan));
    return (await repo.findTestCardByHash(db, teamId, hash)) !== undefined;
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
    if (!row) throw notFound('Gateway');
    return this.gatewayView(row);
  }

  async listGateways(teamId: string, query: ListQuery): Promise<ListPage<Gateway>> {
    return this.listPage('gateways', teamId, query, (db, w) => repo.listGateways(db, teamId, w), (r) => this.gatewayView(r));
  }

  // ---- payment routers

  async createRouter(teamId: string, input: CreateRouter): Promise<Router> {
    const { router, members } = await this.store.transaction(async (trx) => {
      await this.requireGateways(trx, teamId, input.members);
      const router = await repo.insertRouter(trx, {
        id: newId('router'),
        team_id: teamId,
        name: input.name,
        strategy: input.strategy,
        max_attempts: input.max_attempts,
        is_active: input.is_active,
      });
      await repo.insertRouterMembers(trx, this.memberRows(teamId, router.id, input.members));
      await this.volume.seed(trx, teamId, input.members.filter((m) => m.monthly_cap != null).map((m) => m.gateway_id));
      return { router, members: await repo.listRouterMembers(trx, teamId, [router.id]) };
    });
    return routerView(router, members);
  }

  async getRouter(teamId: string, id: string): Promise<Router> {
    const found = await this.store.run(async (db) => {
      const router = await repo.findRouter(db, teamId, id);
      return router ? { router, members: await repo.listRouterMembers(db, teamId, [router.id]) } : undefined;
    });
    if (!found) throw notFound('Payment orchestrator');
    return routerView(found.router, found.members);
  }

  async updateRouter(teamId: string, id: string, patch: UpdateRouter): Promise<Router> {
    const fields = presentFields(patch);
    if (!fields) return this.getRouter(teamId, id);
    const { members: newMembers, ...rest } = fields;
    const { router, members } = await this.store.transaction(async (trx) => {
      // The lock keeps two concurrent member replacements from interleaving their delete and insert.
      const current = await repo.findRouter(trx, teamId, id, { forUpdate: true });
      if (!current) throw notFound('Payment orchestrator');
      if (newMembers) {
        await this.requireGateways(trx, teamId, newMembers);
        await repo.deleteRouterMembers(trx, teamId, id);
        await repo.insertRouterMembers(trx, this.memberRows(teamId, id, newMembers));
        await this.volume.seed(trx, teamId, newMembers.filter((m) => m.monthly_cap != null).map((m) => m.gateway_id));
      }
      const router = await repo.updateRouter(trx, teamId, id, rest);
      if (!router) throw notFound('Payment orchestrator');
      return { router, members: await repo.listRouterMembers(trx, teamId, [id]) };
    });
    return routerView(router, members);
  }

  async listRouters(teamId: string, query: ListQuery): Promise<ListPage<Router>> {
    return this.store.run(async (db) => {
      const page = await this.pageOf(db, 'payment_routers', teamId, query, (w) => repo.listRouters(db, teamId, w));
      const members = await repo.listRouterMembers(
        db,
        teamId,
        page.items.map((r) => r.id),
      );
      return { items: page.items.map((r) => routerView(r, members.filter((m) => m.router_id === r.id))), has_more: page.has_more };
    });
  }

  // ---- BIN blacklist

  async addBinBlock(teamId: string, input: CreateBinBlock): Promise<BinBlock> {
    try {
      const row = await this.store.run((db) => repo.insertBinBlock(db, { id: newId('binBlock'), team_id: teamId, prefix: input.prefix, reason: input.reason ?? null }));
      return binBlockView(row);
    } catch (err) {
      if (isUniqueViolation(err, 'bin_blacklist_team_id_prefix_key')) {
        throw new ApiError('conflict', `The prefix ${input.prefix} is already on the BIN blacklist.`, {
          fields: [{ path: 'prefix', message: 'is already on the blacklist' }],
        });
      }
      throw err;
    }
  }

  async deleteBinBlock(teamId: string, id: string): Promise<BinBlock & { deleted: true }> {
    const row = await this.store.run((db) => repo.deleteBinBlock(db, teamId, id));
    if (!row) throw notFound('BIN blacklist entry');
    return { ...binBlockView(row), deleted: true };
  }

  async listBinBlocks(teamId: string, query: ListQuery): Promise<ListPage<BinBlock>> {
    return this.listPage('bin_blacklist', teamId, query, (db, w) => repo.listBinBlocks(db, teamId, w), binBlockView);
  }

  // ---- test cards

  async addTestCard(teamId: string, input: CreateTestCard): Promise<TestCard> {
    const digits = input.card_number;
    try {
      const row = await this.store.run((db) =>
        repo.insertTestCard(db, {
          id: newId('testCard'),
          team_id: teamId,
          card_hash: this.secrets.keyedHash(TEST_CARD_HASH_PURPOSE, digits),
          last4: digits.slice(-4),
          label: input.label ?? null,
        }),
      );
      return testCardView(row);
    } catch (err) {
      // The message never repeats the number, not even its last digits.
      if (isUniqueViolation(err, 'test_cards_team_id_card_hash_key')) {
        throw new ApiError('conflict', 'This card number is already listed as a test card.', {
          fields: [{ path: 'card_number', message: 'is already listed' }],
        });
      }
      throw err;
    }
  }

  async deleteTestCard(teamId: string, id: string): Promise<TestCard & { deleted: true }> {
    const row = await this.store.run((db) => repo.deleteTestCard(db, teamId, id));
    if (!row) throw notFound('Test card');
    return { ...testCardView(row), deleted: true };
  }

  async listTestCards(teamId: string, query: ListQuery): Promise<ListPage<TestCard>> {
    return this.listPage('test_cards', teamId, query, (db, w) => repo.listTestCards(db, teamId, w), testCardView);
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

  private openCredentials(gateway: Row<'gateways'>): Record<string, string> {
    return JSON.parse(this.secrets.decrypt(gateway.credentials)) as Record<string, string>;
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

  /** Every member's gateway must be the team's: one of another team reads as unknown. */
  private async requireGateways(db: Executor, teamId: string, members: readonly RouterMemberInput[]): Promise<void> {
    const found = new Set((await repo.findGateways(db, teamId, members.map((m) => m.gateway_id))).map((g) => g.id));
    const fields: FieldError[] = members.flatMap((m, i) => (found.has(m.gateway_id) ? [] : [{ path: `members.${i}.gateway_id`, message: 'no such gateway' }]));
    if (fields.length > 0) {
      throw new ApiError('validation_failed', `The request is invalid: ${fields.map((f) => `${f.path}: ${f.message}`).join('; ')}`, { fields });
    }
  }

  private memberRows(teamId: string, routerId: string, members: readonly RouterMemberInput[]) {
    return members.map((m) => ({
      id: newId('routerMember'),
      team_id: teamId,
      router_id: routerId,
      gateway_id: m.gateway_id,
      priority: m.priority,
      weight: m.weight,
      monthly_cap: m.monthly_cap ?? null,
    }));
  }

  /** One page of rows (views are built by the caller), through the shared cursor pagination. */
  private pageOf<R>(db: Executor, table: ListableTable, teamId: string, query: ListQuery, fetch: (w: repo.ListWindow) => Promise<R[]>): Promise<ListPage<R>> {
    return listPage(db, table, teamId, query, (afterSeq) => fetch({ afterSeq, limit: query.limit, createdGte: query.created_gte, createdLte: query.created_lte }), (r) => r);
  }

  private listPage<R, V>(
    table: ListableTable,
    teamId: string,
    query: ListQuery,
    fetch: (db: Executor, w: repo.ListWindow) => Promise<R[]>,
    view: (row: R) => V,
  ): Promise<ListPage<V>> {
    return this.store.run(async (db) => {
      const page = await this.pageOf(db, table, teamId, query, (w) => fetch(db, w));
      return { items: page.items.map(view), has_more: page.has_more };
    });
  }

}
