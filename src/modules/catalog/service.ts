import type { Executor, Store } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import * as repo from './repo.ts';

export class CatalogService {
  constructor(private readonly store: Store) {}

  /** Reads other modules run inside their own transaction: they pass its handle. */
  findCampaign(db: Executor, teamId: string, id: string): Promise<Row<'campaigns'> | undefined> {
    return repo.findCampaign(db, teamId, id);
  }

  findOffers(db: Executor, teamId: string, ids: readonly string[]): Promise<Row<'offers'>[]> {
    return repo.findOffers(db, teamId, ids);
  }

  findUpsell(db: Executor, teamId: string, id: string): Promise<Row<'upsells'> | undefined> {
    return repo.findUpsell(db, teamId, id);
  }
}
