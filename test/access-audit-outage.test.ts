import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/server.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { nmiSandboxGateway } from './support/nmi.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  team = await app.newTeam('Audit outage');
  funnel = await seedFunnel(app, team.teamId);
  const gw = await nmiSandboxGateway(team, sandbox.url);
  expect((await team.api.patch(`/v1/campaigns/${funnel.campaignId}`, { gateway_id: gw.id })).status).toBe(200);
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

/** A database blip on audit_log only: every insert into it fails until the trigger is dropped. */
async function breakAuditInserts(): Promise<void> {
  await app.store.run(async (db) => {
    await sql`create or replace function test_refuse_audit_insert() returns trigger language plpgsql as $$ begin raise exception 'audit_log unavailable (test blip)'; end $$`.execute(db);
    await sql`create trigger test_refuse_audit_insert before insert on audit_log for each row execute function test_refuse_audit_insert()`.execute(db);
  });
}
async function repairAuditInserts(): Promise<void> {
  await app.store.run((db) => sql`drop trigger if exists test_refuse_audit_insert on audit_log`.execute(db));
}

async function refundEntries(order: string) {
  const r = await team.api.get(`/v1/audit-log?action=order.refunded&target_id=${order}`);
  expect(r.status).toBe(200);
  return r.body.data as { action: string; target: { id: string }; request_id: string; data: Record<string, unknown> }[];
}

describe('an audit write that fails after a committed refund', () => {
  it('never turns the 201 into an error: the retry replays (one refund), the entry is logged and written once the database is back', async () => {
    const paid = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email() },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: CARD,
    });
    expect(paid.status, paid.text).toBe(200);
    const order = paid.body.data.order_number as string;

    await breakAuditInserts();
    try {
      const headers = { 'idempotency-key': 'outage-refund-1', 'x-request-id': 'req-outage-refund-1' };
      const refund = await team.api.post(`/v1/orders/${order}/refunds`, { amount: 700 }, headers);
      expect(refund.status, refund.text).toBe(201);
      // The client did not see an error, but a client that retries anyway gets the same answer back.
      const retry = await team.api.post(`/v1/orders/${order}/refunds`, { amount: 700 }, headers);
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body).toEqual(refund.body);

      const refunds = await team.api.get(`/v1/transactions?order_number=${order}&type=refund`);
      expect(refunds.status).toBe(200);
      expect(refunds.body.data).toHaveLength(1);
      expect(refunds.body.data[0].amount).toBe(700);

      // Logged at error level, with the entry (and no card data).
      const lines = app.logs.filter((l) => l.includes('audit entry not written'));
      expect(lines).toHaveLength(1);
      const line = JSON.parse(lines[0]!);
      expect(line.level).toBe(50);
      expect(line.audit).toMatchObject({ action: 'order.refunded', team_id: team.teamId, target: { id: order }, request_id: 'req-outage-refund-1', data: { amount: 700 } });
      expect(lines[0]).not.toContain(CARD.card_number);
      expect(await refundEntries(order)).toEqual([]);
    } finally {
      await repairAuditInserts();
    }

    // The background retry writes it once the table takes inserts again (backoff at most 5 s).
    const deadline = Date.now() + 60_000;
    let entries = await refundEntries(order);
    while (entries.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      entries = await refundEntries(order);
    }
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: 'order.refunded', target: { id: order }, request_id: 'req-outage-refund-1', data: { amount: 700 } });
    expect(app.logs.some((l) => l.includes('audit entry written on retry'))).toBe(true);

    // And after the blip, entries are written inline again.
    const again = await team.api.post(`/v1/orders/${order}/refunds`, { amount: 100 }, { 'idempotency-key': 'outage-refund-2' });
    expect(again.status, again.text).toBe(201);
    expect(await refundEntries(order)).toHaveLength(2);
  });
});
