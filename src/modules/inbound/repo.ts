import type { Executor } from '../../db/database.ts';
import type { NewRow } from '../../db/schema.ts';

export async function insertInbound(db: Executor, row: NewRow<'inbound_webhooks'>): Promise<boolean> {
  const r = await db.insertInto('inbound_webhooks').values(row).onConflict((oc) => oc.columns(['source', 'event_id']).doNothing()).returning('id').executeTakeFirst();
  return r !== undefined;
}

/** The sources (`<provider>:<account id>`, starting `prefix`) of the team that recorded an event id. */
export async function inboundSourcesOf(db: Executor, teamId: string, prefix: string, eventId: string): Promise<string[]> {
  const rows = await db.selectFrom('inbound_webhooks').select('source').where('team_id', '=', teamId).where('event_id', '=', eventId).where('source', 'like', `${prefix}%`).execute();
  return rows.map((r) => r.source);
}

export async function inboundSeen(db: Executor, source: string, eventId: string): Promise<boolean> {
  const r = await db.selectFrom('inbound_webhooks').select('id').where('source', '=', source).where('event_id', '=', eventId).executeTakeFirst();
  return r !== undefined;
}
