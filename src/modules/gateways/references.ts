import { ApiError, type FieldError } from '../../app/errors.ts';
import type { Executor } from '../../db/database.ts';
import * as repo from './repo.ts';

/** A request field that names a gateway or payment orchestrator by id. */
export interface Reference {
  path: string;
  id: string;
}

export interface RoutingReferences {
  gateways?: readonly Reference[];
  paymentOrchestrators?: readonly Reference[];
}

/** Unknown and another team's id read the same, so the answer never tells that an id exists elsewhere. */
function notOwned(path: string, noun: string): FieldError {
  return { path, message: `no ${noun} with this id in your team` };
}

/** The fields whose gateway or payment orchestrator is not the team's. */
async function unownedRouting(db: Executor, teamId: string, refs: RoutingReferences): Promise<FieldError[]> {
  const check = async (table: 'gateways' | 'payment_routers', noun: string, list: readonly Reference[] = []) => {
    const owned = await repo.ownedIds(db, table, teamId, list.map((r) => r.id));
    return list.filter((r) => !owned.has(r.id)).map((r) => notOwned(r.path, noun));
  };
  return [...(await check('gateways', 'gateway', refs.gateways)), ...(await check('payment_routers', 'payment orchestrator', refs.paymentOrchestrators))];
}

/**
 * One 422 naming every field whose gateway or payment orchestrator is not the team's. Run it in
 * the transaction of the write that stores the references (gateways and orchestrators are never
 * deleted, so the answer holds until it commits).
 */
export async function assertOwnedRouting(db: Executor, teamId: string, refs: RoutingReferences): Promise<void> {
  const fields = await unownedRouting(db, teamId, refs);
  if (fields.length > 0) {
    throw new ApiError('validation_failed', `The request is invalid: ${fields.map((f) => `${f.path}: ${f.message}`).join('; ')}`, { fields });
  }
}
