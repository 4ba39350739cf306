/**
 * The Affiliate role for a member, as for an API token: an invitation (or a role change) to
 * `affiliate` without affiliate ids is 422 naming affiliate_ids and writes nothing; with them, the
 * invitee accepts, logs in and sees only the orders of those affiliates in GET /v1/affiliate-orders
 * (not another affiliate's, not a throttled one, not one without an affiliate).
 */
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mailedLink } from './support/account-mail.ts';
import { type AffiliateWorld, affiliateWorld, createAffiliate, createOrder } from './support/affiliates.ts';
import { email } from './support/fixtures.ts';
import { login, SessionClient } from './support/harness.ts';

const PASSWORD = 'correct horse battery';
vi.setConfig({ testTimeout: 90_000, hookTimeout: 180_000 });

let w: AffiliateWorld;
let dataDir: string;
let owner: SessionClient;

beforeAll(async () => {
  dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'checkstand-users-affiliate-'));
  w = await affiliateWorld({ CHECKSTAND_DATA_DIR: dataDir });
  const ownerEmail = email('owner');
  await w.app.ctx.services.users.createUser({ teamId: w.team.teamId, email: ownerEmail, password: PASSWORD });
  owner = await login(w.app.url, { email: ownerEmail, password: PASSWORD });
});
afterAll(async () => {
  await w?.close();
  if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
});

describe('an Affiliate member', () => {
  it('an invitation to the Affiliate role without affiliate_ids is 422 naming affiliate_ids, and nothing is written', async () => {
    const address = email('noids');
    for (const body of [{ email: address, role: 'affiliate' }, { email: address, role: 'affiliate', affiliate_ids: [] }]) {
      const r = await owner.post('/v1/invitations', body);
      expect(r.status, r.text).toBe(422);
      expect(r.body.error).toMatchObject({ code: 'validation_failed', fields: [{ path: 'affiliate_ids', message: 'required for role affiliate' }] });
      expect(r.body.message).toContain('affiliate_ids');
    }
    const written = await w.app.store.run((db) => db.selectFrom('invitations').select('id').where('email', '=', address).execute());
    expect(written).toHaveLength(0);
  });

  it("is invited with affiliate ids, accepts, logs in and sees only those affiliates' non-throttled orders (/v1/affiliate-orders)", async () => {
    const mine = await createAffiliate(w.team.api);
    const theirs = await createAffiliate(w.team.api);
    const visible = await createOrder(w, { affiliate: { affiliate_id: mine.id } });
    const throttled = await createOrder(w, { affiliate: { affiliate_id: mine.id }, is_throttle: true });
    const other = await createOrder(w, { affiliate: { affiliate_id: theirs.id } });
    const none = await createOrder(w);
    expect([visible.status, throttled.status, other.status, none.status]).toEqual([200, 200, 200, 200]);

    const address = email('affiliate');
    const invited = await owner.post('/v1/invitations', { email: address, role: 'affiliate', affiliate_ids: [mine.id] });
    expect(invited.status, invited.text).toBe(201);
    expect(invited.body.data).toMatchObject({ role: 'affiliate', affiliate_ids: [mine.id] });
    const { token } = await mailedLink(dataDir, address, 'accept-invitation');
    const accepted = await new SessionClient(w.app.url).post('/v1/invitations/accept', { token, name: 'Aff Iliate', password: PASSWORD });
    expect(accepted.status, accepted.text).toBe(201);
    expect(accepted.body.data).toMatchObject({ role: 'affiliate', affiliate_ids: [mine.id] });

    const member = await login(w.app.url, { email: address, password: PASSWORD });
    // An affiliate-scoped caller reads orders through the affiliates' view (without the customer), not the merchant's.
    const orders = await member.get('/v1/affiliate-orders?limit=100');
    expect(orders.status, orders.text).toBe(200);
    expect(orders.body.data.map((o: { order_number: string }) => o.order_number)).toEqual([visible.body.data.order_number]);
    expect((await member.get(`/v1/affiliate-orders/${visible.body.data.order_number}`)).status).toBe(200);
    for (const hidden of [throttled, other, none]) expect((await member.get(`/v1/affiliate-orders/${hidden.body.data.order_number}`)).status).toBe(404);
    expect((await member.get('/v1/orders')).status).toBe(403);
    // The owner sees them all.
    const all = (await owner.get('/v1/orders?limit=100')).body.data.map((o: { order_number: string }) => o.order_number);
    expect(all).toEqual(expect.arrayContaining([visible, throttled, other, none].map((r) => r.body.data.order_number)));

    // A member moved to the Affiliate role needs affiliate ids too; removing the last ones is refused the same way.
    const memberId = accepted.body.data.user.id as string;
    const emptied = await owner.patch(`/v1/members/${memberId}`, { affiliate_ids: [] });
    expect(emptied.status, emptied.text).toBe(422);
    expect(emptied.body.error.fields).toEqual([{ path: 'affiliate_ids', message: 'required for role affiliate' }]);
    expect((await owner.get(`/v1/members/${memberId}`)).body.data.affiliate_ids).toEqual([mine.id]);
  });
});
