import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { email } from './support/fixtures.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

const PASSWORD = 'correct horse battery staple 42';

let app: TestApp;
let team: TestTeam;
let memberId: string;
let usersAdmin: ApiClient;
beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam('Escalation');
  const users = app.ctx.services.users;
  await users.createUser({ teamId: team.teamId, email: email('owner'), password: PASSWORD });
  memberId = (await users.createUser({ teamId: team.teamId, email: email('l1'), password: PASSWORD, role: 'support_l1' })).id;
  const minted = await team.api.post('/v1/api-tokens', { name: 'users only', permissions: ['users:manage', 'users:view'] });
  expect(minted.status, minted.text).toBe(201);
  usersAdmin = new ApiClient(app.url, minted.body.data.secret);
});
afterAll(async () => app?.close());

const invitations = () => app.store.run((db) => db.selectFrom('invitations').selectAll().where('team_id', '=', team.teamId).execute());
const roleOf = async (id: string) => (await team.api.get(`/v1/members/${id}`)).body.data.role as string;

describe('self-escalation through the users API: a token with users:manage and users:view only', () => {
  it('cannot invite someone to a role that holds more than it does: 403 permission_denied, no invitation', async () => {
    for (const role of ['support_l1', 'support_l2', 'account_admin']) {
      const r = await usersAdmin.post('/v1/invitations', { email: email('invitee'), role });
      expect(r.status, `${role}: ${r.text}`).toBe(403);
      expect(r.body.error.code).toBe('permission_denied');
      expect(r.body.data.permissions, role).toContain('orders:view');
    }
    expect(await invitations()).toEqual([]);
  });

  it('cannot promote a member to such a role: 403 permission_denied, the role unchanged', async () => {
    for (const role of ['support_l2', 'account_manager', 'account_admin']) {
      const r = await usersAdmin.patch(`/v1/members/${memberId}`, { role });
      expect(r.status, `${role}: ${r.text}`).toBe(403);
      expect(r.body.error.code).toBe('permission_denied');
    }
    expect(await roleOf(memberId)).toBe('support_l1');
    expect((await team.api.get('/v1/audit-log?action=member.*')).body.data).toEqual([]);
  });

  it('a caller holding the role\'s permissions can (the refusal above is about the permissions, not the route)', async () => {
    const minted = await team.api.post('/v1/api-tokens', { name: 'users and support', permissions: ['users:manage', 'users:view', 'team:view', 'orders:view', 'orders:annotate', 'catalog:view'] });
    const support = new ApiClient(app.url, minted.body.data.secret);
    const invited = await support.post('/v1/invitations', { email: email('invitee'), role: 'support_l1' });
    expect(invited.status, invited.text).toBe(201);
    // Still not to Level 2: it lacks refunds, voids, shipments and subscriptions.
    const up = await support.patch(`/v1/members/${memberId}`, { role: 'support_l2' });
    expect(up.status).toBe(403);
    expect(up.body.data.permissions.sort()).toEqual(['orders:create', 'orders:fulfill', 'orders:refund', 'orders:void', 'subscriptions:manage']);
    expect(await roleOf(memberId)).toBe('support_l1');
    expect((await invitations()).length).toBe(1);
  });
});
