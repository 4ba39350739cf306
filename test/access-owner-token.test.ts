import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_PERMISSIONS } from '../src/modules/access/permissions.ts';
import { email } from './support/fixtures.ts';
import { ApiClient, login, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

const PASSWORD = 'correct horse battery staple 42';

let app: TestApp;
let team: TestTeam;
let ownerId: string;
let adminId: string;
beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam('Owned');
  const users = app.ctx.services.users;
  ownerId = (await users.createUser({ teamId: team.teamId, email: email('owner'), password: PASSWORD })).id;
  adminId = (await users.createUser({ teamId: team.teamId, email: email('admin'), password: PASSWORD, role: 'account_admin' })).id;
});
afterAll(async () => app?.close());

async function ownerOfTeam(): Promise<string> {
  const members = (await team.api.get('/v1/members')).body.data as { id: string; role: string }[];
  return members.filter((m) => m.role === 'owner').map((m) => m.id).join(',');
}

describe('a token holds the owner\'s permissions, never ownership', () => {
  it('an operator token (no role) has every permission but no role, and cannot transfer ownership', async () => {
    const me = await team.api.get('/v1/permissions');
    expect(me.body.data.you).toMatchObject({ kind: 'token', role: null });
    expect(me.body.data.you.permissions).toEqual([...ALL_PERMISSIONS].sort());
    const r = await team.api.post(`/v1/members/${adminId}/transfer-ownership`);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('permission_denied');
    expect(await ownerOfTeam()).toBe(ownerId);
  });

  it('nor can a token minted with role owner (by the operator token, which holds every permission)', async () => {
    const minted = await team.api.post('/v1/api-tokens', { name: 'owner-ish', role: 'owner' });
    expect(minted.status, minted.text).toBe(201);
    expect(minted.body.data.role).toBe('owner');
    const ownerToken = new ApiClient(app.url, minted.body.data.secret);
    expect((await ownerToken.get('/v1/audit-log')).status).toBe(200);
    const r = await ownerToken.post(`/v1/members/${adminId}/transfer-ownership`);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('permission_denied');
    expect(await ownerOfTeam()).toBe(ownerId);
    expect((await team.api.get(`/v1/audit-log?action=ownership.transferred`)).body.data).toEqual([]);
  });

  it("the Team Owner's own session still transfers it", async () => {
    const members = (await team.api.get('/v1/members')).body.data as { id: string; email: string }[];
    const boss = await login(app.url, { email: members.find((m) => m.id === ownerId)!.email, password: PASSWORD });
    const moved = await boss.post(`/v1/members/${adminId}/transfer-ownership`);
    expect(moved.status, moved.text).toBe(200);
    expect(await ownerOfTeam()).toBe(adminId);
  });
});
