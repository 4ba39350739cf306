import { configCache } from '../../app/cache.ts';
import type { Executor, Store } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import * as repo from './repo.ts';

const key = (teamId: string, id: string) => `${teamId}\u0000${id}`;

/**
 * The catalog rows the checkout reads on every call (campaigns, offers, upsells), through the
 * process's configuration cache (src/app/cache.ts). Rows come back frozen: they are shared.
 * CatalogService drops an entry after each of its own writes commits; a miss reads on the
 * caller's handle, so it joins the caller's transaction like the uncached read did.
 */
export class CatalogCache {
  private readonly campaigns;
  private readonly offers;
  private readonly upsells;

  constructor(store: Store) {
    this.campaigns = configCache<Readonly<Row<'campaigns'>>>(store, 'campaigns');
    this.offers = configCache<Readonly<Row<'offers'>>>(store, 'offers');
    this.upsells = configCache<Readonly<Row<'upsells'>>>(store, 'upsells');
  }

  campaign(db: Executor, teamId: string, id: string): Promise<Row<'campaigns'> | undefined> {
    return this.campaigns.get(key(teamId, id), async () => frozen(await repo.findCampaign(db, teamId, id)));
  }

  async offersOf(db: Executor, teamId: string, ids: readonly string[]): Promise<Row<'offers'>[]> {
    if (ids.length === 0) return [];
    const byKey = await this.offers.getMany(
      ids.map((id) => key(teamId, id)),
      async (missing) => {
        const rows = await repo.findOffers(db, teamId, missing.map((k) => k.slice(teamId.length + 1)));
        return new Map(rows.map((r) => [key(teamId, r.id), Object.freeze(r)]));
      },
    );
    return [...byKey.values()];
  }

  upsell(db: Executor, teamId: string, id: string): Promise<Row<'upsells'> | undefined> {
    return this.upsells.get(key(teamId, id), async () => frozen(await repo.findUpsell(db, teamId, id)));
  }

  forgetCampaign(teamId: string, id: string): void {
    this.campaigns.delete(key(teamId, id));
  }

  forgetOffer(teamId: string, id: string): void {
    this.offers.delete(key(teamId, id));
  }

  forgetUpsell(teamId: string, id: string): void {
    this.upsells.delete(key(teamId, id));
  }
}

function frozen<T extends object>(row: T | undefined): T | undefined {
  return row && Object.freeze(row);
}
