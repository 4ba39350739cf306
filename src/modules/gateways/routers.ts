import { configCache } from '../../app/cache.ts';
import { notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { ListQuery } from '../../app/schemas.ts';
import type { Executor, Store } from '../../db/database.ts';
import type { Page } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import { presentFields } from '../../db/helpers.ts';
import { pageOf } from './pages.ts';
import { assertOwnedRouting } from './references.ts';
import * as repo from './repo.ts';
import type { CreateRouter, Router, RouterMemberInput, UpdateRouter } from './schemas.ts';
import type { GatewayVolume } from './volume.ts';

export type RoutingStrategy = 'priority' | 'weighted';

export type RouterMemberWithGateway = Row<'payment_router_members'> & { gateway: Row<'gateways'> };

export interface RouterWithMembers {
  router: Row<'payment_routers'>;
  /** By ascending priority, then id. */
  members: RouterMemberWithGateway[];
}

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

/** `volumes`: each member gateway's month-to-date volume (GatewayVolume.approvedThisMonthByGateway). */
export function routerView(r: Row<'payment_routers'>, members: Row<'payment_router_members'>[], volumes: ReadonlyMap<string, number>): Router {
  return {
    object: 'payment_orchestrator',
    id: r.id,
    name: r.name,
    strategy: r.strategy,
    max_attempts: r.max_attempts,
    is_active: r.is_active,
    members: members.map((m) => ({ id: m.id, gateway_id: m.gateway_id, priority: m.priority, weight: m.weight, monthly_cap: m.monthly_cap, month_to_date_volume: volumes.get(m.gateway_id) ?? 0 })),
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

/** Payment orchestrators (payment routers): an ordered set of the team's gateways a card payment is tried over. */
export class PaymentRouters {
  /** A router with its members and their gateways, cached per process; dropped after a change to it or to any gateway. */
  private readonly cache;

  constructor(
    private readonly store: Store,
    private readonly volume: GatewayVolume,
  ) {
    this.cache = configCache<RouterWithMembers>(store, 'payment_routers');
  }

  /** For the payment core, in its own transaction. Shared and frozen: the members' caps are limits, the counters they limit are not cached (volume.ts). */
  find(db: Executor, teamId: string, id: string): Promise<RouterWithMembers | undefined> {
    return this.cache.get(`${teamId}\u0000${id}`, async () => {
      const found = await this.load(db, teamId, id);
      return found && Object.freeze({ router: Object.freeze(found.router), members: Object.freeze(found.members.map((m) => Object.freeze(m))) as RouterMemberWithGateway[] });
    });
  }

  /** A gateway changed: every cached router may hold it as a member. */
  forgetAll(): void {
    this.cache.clear();
  }

  private async load(db: Executor, teamId: string, id: string): Promise<RouterWithMembers | undefined> {
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

  async create(teamId: string, input: CreateRouter): Promise<Router> {
    const { router, members, volumes } = await this.store.transaction(async (trx) => {
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
      return this.withVolumes(trx, teamId, router, await repo.listRouterMembers(trx, teamId, [router.id]));
    });
    return routerView(router, members, volumes);
  }

  async get(teamId: string, id: string): Promise<Router> {
    const found = await this.store.run(async (db) => {
      const router = await repo.findRouter(db, teamId, id);
      return router ? this.withVolumes(db, teamId, router, await repo.listRouterMembers(db, teamId, [router.id])) : undefined;
    });
    if (!found) throw notFound('Payment orchestrator');
    return routerView(found.router, found.members, found.volumes);
  }

  async update(teamId: string, id: string, patch: UpdateRouter): Promise<Router> {
    const fields = presentFields(patch);
    if (!fields) return this.get(teamId, id);
    const { members: newMembers, ...rest } = fields;
    const { router, members, volumes } = await this.store.transaction(async (trx) => {
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
      return this.withVolumes(trx, teamId, router, await repo.listRouterMembers(trx, teamId, [id]));
    });
    this.cache.delete(`${teamId}\u0000${id}`);
    return routerView(router, members, volumes);
  }

  list(teamId: string, query: ListQuery): Promise<Page<Router>> {
    return this.store.run(async (db) => {
      const page = await pageOf(db, 'payment_routers', teamId, query, (w) => repo.listRouters(db, teamId, w));
      const members = await repo.listRouterMembers(
        db,
        teamId,
        page.items.map((r) => r.id),
      );
      const volumes = await this.volume.approvedThisMonthByGateway(
        db,
        teamId,
        members.map((m) => m.gateway_id),
      );
      return { items: page.items.map((r) => routerView(r, members.filter((m) => m.router_id === r.id), volumes)), has_more: page.has_more };
    });
  }

  private async withVolumes(db: Executor, teamId: string, router: Row<'payment_routers'>, members: Row<'payment_router_members'>[]) {
    const volumes = await this.volume.approvedThisMonthByGateway(
      db,
      teamId,
      members.map((m) => m.gateway_id),
    );
    return { router, members, volumes };
  }

  /** Every member's gateway must be the team's. */
  private requireGateways(db: Executor, teamId: string, members: readonly RouterMemberInput[]): Promise<void> {
    return assertOwnedRouting(db, teamId, { gateways: members.map((m, i) => ({ path: `members.${i}.gateway_id`, id: m.gateway_id })) });
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
}
