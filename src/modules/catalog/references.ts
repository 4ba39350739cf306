import { ApiError, type FieldError } from '../../app/errors.ts';
import type { Executor } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import * as repo from './repo.ts';

/**
 * The catalog objects a request names by id, looked up within the team in the transaction of the
 * write that stores them. Unknown and another team's ids read the same ("no … with this id in
 * your team"), so the answer never tells that an id exists elsewhere; every failing field is
 * reported at once, and nothing is written.
 */
export class OwnedReferences {
  private readonly missing: FieldError[] = [];

  constructor(
    private readonly db: Executor,
    private readonly teamId: string,
  ) {}

  async campaign(id: string, path = 'campaign_id'): Promise<Row<'campaigns'> | undefined> {
    return this.found(await repo.findCampaign(this.db, this.teamId, id), path, 'campaign');
  }

  async product(id: string, path = 'product_id'): Promise<Row<'products'> | undefined> {
    return this.found(await repo.findProduct(this.db, this.teamId, id), path, 'product');
  }

  async offer(id: string, path = 'offer_id'): Promise<Row<'offers'> | undefined> {
    return this.found(await repo.findOffer(this.db, this.teamId, id), path, 'offer');
  }

  /** Throws the 422 when any reference failed. */
  assert(): void {
    if (this.missing.length === 0) return;
    const summary = this.missing.map((f) => `${f.path}: ${f.message}`).join('; ');
    throw new ApiError('validation_failed', `The request is invalid: ${summary}`, { fields: [...this.missing] });
  }

  /** `assert()`, then the rows looked up, known to be there. */
  ensure<T extends Record<string, unknown>>(rows: T): { [K in keyof T]: NonNullable<T[K]> } {
    this.assert();
    return rows as { [K in keyof T]: NonNullable<T[K]> };
  }

  private found<R>(row: R | undefined, path: string, noun: string): R | undefined {
    if (!row) this.missing.push({ path, message: `no ${noun} with this id in your team` });
    return row;
  }
}
