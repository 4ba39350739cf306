import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startSandbox } from '../src/sandbox/server.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { login, SessionClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { nmiSandboxGateway } from './support/nmi.ts';

const PASSWORD = 'correct horse battery';
// Every login and password costs a real scrypt (N=2^15): on a busy shared machine these tests need more time than the default.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 120_000 });

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
let dataDir: string;
let ownerEmail: string;
let owner: SessionClient;

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'checkstand-users-'));
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp({ CHECKSTAND_DATA_DIR: dataDir });
  team = await app.newTeam('Glow');
  funnel = await seedFunnel(app, team.teamId);
  const gw = await nmiSandboxGateway(team, sandbox.url);
  expect((await team.api.patch(`/v1/campaigns/${funnel.campaignId}`, { gateway_id: gw.id })).status).toBe(200);
  ownerEmail = email('owner');
  await app.ctx.services.users.createUser({ teamId: team.teamId, email: ownerEmail, password: PASSWORD });
  owner = await login(app.url, { email: ownerEmail, password: PASSWORD });
}, 120_000);
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
  await fs.rm(dataDir, { recursive: true, force: true });
});

// ---- the mail the server wrote (embedded mode: one .eml file per mail under <data dir>/mail)

function decodeQuotedPrintable(s: string): string {
  return s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** The newest mail to `to` whose text matches `pattern`; waits for it (password-reset mail is sent after the answer). */
async function mailTo(to: string, pattern: RegExp): Promise<{ subject: string; text: string; match: RegExpMatchArray }> {
  const dir = path.join(dataDir, 'mail');
  for (let i = 0; i < 100; i++) {
    const files = await fs.readdir(dir).catch(() => [] as string[]);
    const mails = await Promise.all(files.filter((f) => f.endsWith('.eml')).map(async (f) => ({ raw: await fs.readFile(path.join(dir, f), 'utf8'), at: (await fs.stat(path.join(dir, f))).mtimeMs })));
    for (const m of mails.sort((a, b) => b.at - a.at)) {
      if (!new RegExp(`^To: .*${to.replace(/[.+]/g, '\\$&')}`, 'mi').test(m.raw)) continue;
      const text = decodeQuotedPrintable(m.raw);
      const match = text.match(pattern);
      if (match) return { subject: /^Subject: (.*)$/m.exec(m.raw)?.[1] ?? '', text, match };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no mail to ${to} matching ${pattern}`);
}

async function invite(by: SessionClient, address: string, role: string, extra: Record<string, unknown> = {}) {
  const r = await by.post('/v1/invitations', { email: address, role, ...extra });
  expect(r.status, r.text).toBe(201);
  expect(r.body.data).toMatchObject({ email: address, role, status: 'pending', mail_sent: true });
  return r.body.data as { id: string };
}

async function acceptedMember(role: string): Promise<{ client: SessionClient; email: string; id: string }> {
  const address = email(role);
  await invite(owner, address, role);
  const { match } = await mailTo(address, /token=(csi_[0-9A-Za-z]+)/);
  const client = new SessionClient(app.url);
  const r = await client.post('/v1/invitations/accept', { token: match[1], name: `A ${role}`, password: PASSWORD });
  expect(r.status, r.text).toBe(201);
  return { client, email: address, id: r.body.data.user.id };
}

async function paidOrder(): Promise<{ order: string; customer: string }> {
  const r = await team.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email() },
    products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
    payment: CARD,
  });
  expect(r.status, r.text).toBe(200);
  return { order: r.body.data.order_number, customer: r.body.data.customer.customer_number };
}

describe('invitation → accept → login → act within the role', () => {
  it('a Customer Support Level 1 reads orders and adds a customer note but gets 403 on a refund; a Level 2 refunds', async () => {
    const { order, customer } = await paidOrder();
    const address = email('l1');
    await invite(owner, address, 'support_l1');
    const mail = await mailTo(address, /token=(csi_[0-9A-Za-z]+)/);
    expect(mail.subject).toBe('You are invited to Glow on Checkstand');
    expect(mail.text).toContain('as Customer Support Level 1');

    const invitee = new SessionClient(app.url);
    const accepted = await invitee.post('/v1/invitations/accept', { token: mail.match[1], name: 'Lee One', password: PASSWORD });
    expect(accepted.status, accepted.text).toBe(201);
    expect(accepted.body.data).toMatchObject({ kind: 'user', role: 'support_l1', user: { email: address, name: 'Lee One' }, team: { id: team.teamId } });
    expect(invitee.cookies.has('checkstand_session')).toBe(true);
    // The link works once.
    const again = await new SessionClient(app.url).post('/v1/invitations/accept', { token: mail.match[1], password: PASSWORD });
    expect(again.status).toBe(410);
    expect(again.body.error.code).toBe('invitation_expired');

    // A fresh login with the new password, then act.
    const l1 = await login(app.url, { email: address, password: PASSWORD });
    expect((await l1.get(`/v1/orders/${order}`)).status).toBe(200);
    const note = await l1.post(`/v1/customers/${customer}/notes`, { body: 'Asked about delivery' });
    expect(note.status, note.text).toBe(201);
    const refused = await l1.post(`/v1/orders/${order}/refunds`, { amount: 500 });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('permission_denied');
    expect((await l1.get('/v1/gateways')).status).toBe(403);
    expect((await l1.get('/v1/members')).status).toBe(403);

    const l2 = (await acceptedMember('support_l2')).client;
    const refund = await l2.post(`/v1/orders/${order}/refunds`, { amount: 500 });
    expect(refund.status, refund.text).toBe(201);
    expect((await l2.patch('/v1/team', { name: 'Nope' })).status).toBe(403);
  });

  it('an existing account joins another team with its own password (not a new one), and can switch between its teams', async () => {
    const other = await app.newTeam('Second shop');
    const otherOwnerEmail = email('owner2');
    await app.ctx.services.users.createUser({ teamId: other.teamId, email: otherOwnerEmail, password: PASSWORD });
    const otherOwner = await login(app.url, { email: otherOwnerEmail, password: PASSWORD });
    await invite(otherOwner, ownerEmail, 'account_manager');
    const { match } = await mailTo(ownerEmail, /token=(csi_[0-9A-Za-z]+)/);
    const wrong = await new SessionClient(app.url).post('/v1/invitations/accept', { token: match[1], password: 'some other password' });
    expect(wrong.status).toBe(401);
    const joined = await new SessionClient(app.url).post('/v1/invitations/accept', { token: match[1], password: PASSWORD });
    expect(joined.status, joined.text).toBe(201);
    expect(joined.body.data).toMatchObject({ role: 'account_manager', team: { id: other.teamId } });

    const s = await login(app.url, { email: ownerEmail, password: PASSWORD });
    expect(s.login.body.data.team.id).toBe(team.teamId);
    expect(s.login.body.data.teams.map((t: { team_id: string }) => t.team_id)).toEqual([team.teamId, other.teamId]);
    const switched = await s.post('/v1/session/team', { team_id: other.teamId });
    expect(switched.status, switched.text).toBe(200);
    expect(switched.body.data).toMatchObject({ role: 'account_manager', team: { id: other.teamId, name: 'Second shop' } });
    expect((await s.get('/v1/team')).body.data.id).toBe(other.teamId);
    expect((await s.patch('/v1/team', { name: 'x' })).status).toBe(403);
    const foreign = await s.post('/v1/session/team', { team_id: (await app.newTeam()).teamId });
    expect(foreign.status).toBe(404);
  });
});

describe('members and ownership', () => {
  it('lists members; changes a role within what the caller holds; removing a member ends their access on the next request', async () => {
    const m = await acceptedMember('support_l1');
    const list = await owner.get('/v1/members');
    expect(list.status).toBe(200);
    expect(list.body.data.find((x: { id: string }) => x.id === m.id)).toMatchObject({ object: 'member', email: m.email, role: 'support_l1', role_name: 'Customer Support Level 1' });
    const up = await owner.patch(`/v1/members/${m.id}`, { role: 'support_l2' });
    expect(up.status, up.text).toBe(200);
    expect(up.body.data.role).toBe('support_l2');
    // The member's next request already has the new role.
    expect((await m.client.get('/v1/session')).body.data.role).toBe('support_l2');

    expect((await owner.delete(`/v1/members/${m.id}`)).status).toBe(200);
    const after = await m.client.get('/v1/orders');
    expect(after.status).toBe(401);
    expect((await owner.get(`/v1/members/${m.id}`)).status).toBe(404);
  });

  it('refuses self-escalation: a member cannot grant a role with permissions it does not hold (403), nor invite as owner (422)', async () => {
    const manager = await acceptedMember('account_admin');
    // An Account Admin has users:manage but not billing:manage: it cannot make or change a role it lacks... every role but owner is within it.
    const l1 = await acceptedMember('support_l1');
    expect((await manager.client.patch(`/v1/members/${l1.id}`, { role: 'account_manager' })).status).toBe(200);
    const asOwner = await manager.client.post('/v1/invitations', { email: email(), role: 'owner' });
    expect(asOwner.status).toBe(422);
    const patchOwner = await manager.client.patch(`/v1/members/${l1.id}`, { role: 'owner' });
    expect(patchOwner.status).toBe(422);

    // A Customer Support Level 2 promoted nowhere: it has no users:manage at all.
    const l2 = await acceptedMember('support_l2');
    const self = await l2.client.patch(`/v1/members/${l2.id}`, { role: 'account_admin' });
    expect(self.status).toBe(403);
    expect(self.body.error.code).toBe('permission_denied');
    expect((await owner.get(`/v1/members/${l2.id}`)).body.data.role).toBe('support_l2');
  });

  it('refuses to remove or demote the Team Owner (409 owner_required); ownership transfers, old owner becomes Account Admin', async () => {
    const t = await app.newTeam('Transfer');
    const first = email('first');
    await app.ctx.services.users.createUser({ teamId: t.teamId, email: first, password: PASSWORD });
    const boss = await login(app.url, { email: first, password: PASSWORD });
    const bossId = boss.login.body.data.user.id as string;
    expect((await boss.delete(`/v1/members/${bossId}`)).body.error.code).toBe('owner_required');
    expect((await boss.patch(`/v1/members/${bossId}`, { role: 'account_admin' })).body.error.code).toBe('owner_required');

    const nextAddress = email('next');
    expect((await boss.post('/v1/invitations', { email: nextAddress, role: 'account_admin' })).status).toBe(201);
    const { match } = await mailTo(nextAddress, /token=(csi_[0-9A-Za-z]+)/);
    const next = new SessionClient(app.url);
    const acc = await next.post('/v1/invitations/accept', { token: match[1], password: PASSWORD });
    const nextId = acc.body.data.user.id as string;
    // An Account Admin cannot transfer ownership.
    expect((await next.post(`/v1/members/${bossId}/transfer-ownership`)).status).toBe(403);
    const moved = await boss.post(`/v1/members/${nextId}/transfer-ownership`);
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data.role).toBe('owner');
    const members = (await next.get('/v1/members')).body.data as { id: string; role: string }[];
    expect(members.filter((m) => m.role === 'owner').map((m) => m.id)).toEqual([nextId]);
    expect(members.find((m) => m.id === bossId)!.role).toBe('account_admin');
    expect((await boss.get('/v1/session')).body.data.permissions).not.toContain('billing:manage');
  });

  it('refuses bad input with a clear 4xx and writes nothing: duplicate e-mail, weak password, member already in the team', async () => {
    const users = app.ctx.services.users;
    await expect(users.createUser({ teamId: team.teamId, email: ownerEmail.toUpperCase(), password: PASSWORD, role: 'support_l1' })).rejects.toMatchObject({ code: 'email_taken', status: 409 });
    const t = await app.newTeam();
    await expect(users.createUser({ teamId: t.teamId, email: email(), password: 'short' })).rejects.toMatchObject({ code: 'weak_password', status: 422 });
    await expect(users.createUser({ teamId: t.teamId, email: 'amy@example.com', password: 'amy@example.com' })).rejects.toMatchObject({ code: 'weak_password' });
    await expect(users.createUser({ teamId: t.teamId, email: email(), password: 'password123' })).rejects.toMatchObject({ code: 'weak_password' });
    const counted = await app.store.run((db) => db.selectFrom('memberships').select(['id']).where('team_id', '=', t.teamId).execute());
    expect(counted).toHaveLength(0);

    // A weak password on acceptance: 422 with the field, and the invitation stays open.
    const address = email('weak');
    await invite(owner, address, 'support_l1');
    const { match } = await mailTo(address, /token=(csi_[0-9A-Za-z]+)/);
    const weak = await new SessionClient(app.url).post('/v1/invitations/accept', { token: match[1], password: 'qwertyuiop' });
    expect(weak.status).toBe(422);
    expect(weak.body.error).toMatchObject({ code: 'weak_password', fields: [{ path: 'password' }] });
    expect(weak.body.message).toMatch(/common/);
    expect(await app.store.run((db) => db.selectFrom('users').select(['id']).where('email', '=', address).execute())).toHaveLength(0);
    expect((await new SessionClient(app.url).post('/v1/invitations/accept', { token: match[1], password: PASSWORD })).status).toBe(201);

    const dup = await owner.post('/v1/invitations', { email: address, role: 'support_l2' });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('member_exists');
  });

  it('an expired or revoked invitation answers 410; an unknown token 404; a new invitation replaces the open one', async () => {
    const address = email('late');
    const first = await invite(owner, address, 'support_l1');
    const firstToken = (await mailTo(address, /token=(csi_[0-9A-Za-z]+)/)).match[1]!;
    await invite(owner, address, 'support_l2');
    const secondToken = (await mailTo(address, /as Customer Support Level 2[\s\S]*token=(csi_[0-9A-Za-z]+)/)).match[1]!;
    expect(secondToken).not.toBe(firstToken);
    const list = (await owner.get('/v1/invitations?limit=100')).body.data as { id: string; status: string }[];
    expect(list.find((i) => i.id === first.id)!.status).toBe('revoked');
    expect((await new SessionClient(app.url).post('/v1/invitations/accept', { token: firstToken, password: PASSWORD })).status).toBe(410);

    await app.store.run((db) => db.updateTable('invitations').set({ expires_at: new Date(Date.now() - 1000) }).where('email', '=', address).where('revoked_at', 'is', null).execute());
    const expired = await new SessionClient(app.url).post('/v1/invitations/accept', { token: secondToken, password: PASSWORD });
    expect(expired.status).toBe(410);
    expect(expired.body.error.code).toBe('invitation_expired');
    expect((await new SessionClient(app.url).post('/v1/invitations/accept', { token: 'csi_nope', password: PASSWORD })).status).toBe(404);

    const third = await invite(owner, email('revoked'), 'support_l1');
    expect((await owner.delete(`/v1/invitations/${third.id}`)).body.data.status).toBe('revoked');
    expect((await owner.delete(`/v1/invitations/${third.id}`)).status).toBe(409);
  });
});

describe('password reset by e-mail', () => {
  it('always answers 202; mails a link only to an account; the link sets a new password once and logs out every session', async () => {
    const m = await acceptedMember('support_l1');
    const before = await login(app.url, { email: m.email, password: PASSWORD });
    expect((await new SessionClient(app.url).post('/v1/password-resets', { email: 'nobody@example.com' })).status).toBe(202);
    const r = await new SessionClient(app.url).post('/v1/password-resets', { email: m.email });
    expect(r.status).toBe(202);
    const { match, subject } = await mailTo(m.email, /token=(csr_[0-9A-Za-z]+)/);
    expect(subject).toBe('Reset your Checkstand password');

    const weak = await new SessionClient(app.url).post('/v1/password-resets/confirm', { token: match[1], password: m.email });
    expect(weak.body.error.code).toBe('weak_password');
    const done = await new SessionClient(app.url).post('/v1/password-resets/confirm', { token: match[1], password: 'a brand new passphrase' });
    expect(done.status, done.text).toBe(200);
    expect(done.body.data.sessions_revoked).toBeGreaterThanOrEqual(2);
    expect((await before.get('/v1/orders')).status).toBe(401);
    expect((await m.client.get('/v1/orders')).status).toBe(401);
    expect((await new SessionClient(app.url).post('/v1/sessions', { email: m.email, password: PASSWORD })).status).toBe(401);
    expect((await new SessionClient(app.url).post('/v1/sessions', { email: m.email, password: 'a brand new passphrase' })).status).toBe(201);
    const reused = await new SessionClient(app.url).post('/v1/password-resets/confirm', { token: match[1], password: 'another new passphrase' });
    expect(reused.status).toBe(410);
    expect(reused.body.error.code).toBe('reset_expired');
  });
});

describe('provider users', () => {
  it('a member of a provider organisation switches to the merchant team that granted it access and gets only the grant\'s permissions; a revoked grant ends it', async () => {
    const agency = await app.newTeam('Support Agency');
    await app.store.run((db) => db.updateTable('teams').set({ kind: 'provider' }).where('id', '=', agency.teamId).execute());
    const agentEmail = email('agent');
    await app.ctx.services.users.createUser({ teamId: agency.teamId, email: agentEmail, password: PASSWORD });
    const grantId = `pg_${Date.now()}`;
    await app.store.run((db) =>
      db
        .insertInto('provider_grants')
        .values({ id: grantId, team_id: team.teamId, provider_id: agency.teamId, kind: 'customer_service', permissions: ['team:view', 'orders:view', 'orders:refund', 'billing:manage', 'gateways:manage'] })
        .execute(),
    );
    const agent = await login(app.url, { email: agentEmail, password: PASSWORD });
    expect(agent.login.body.data.team.id).toBe(agency.teamId);
    expect(agent.login.body.data.teams).toContainEqual(expect.objectContaining({ team_id: team.teamId, via: 'provider', role: 'customer_service', provider_id: agency.teamId }));
    const sw = await agent.post('/v1/session/team', { team_id: team.teamId });
    expect(sw.status, sw.text).toBe(200);
    // billing:manage and gateways:manage are never a provider's, whatever the row says.
    expect(sw.body.data).toMatchObject({ kind: 'provider_user', role: 'customer_service', provider_id: agency.teamId });
    expect(sw.body.data.permissions).toEqual(expect.arrayContaining(['orders:refund', 'orders:view', 'team:view']));
    expect(sw.body.data.permissions).not.toContain('billing:manage');
    expect(sw.body.data.permissions).not.toContain('gateways:manage');
    const { order } = await paidOrder();
    expect((await agent.get(`/v1/orders/${order}`)).status).toBe(200);
    expect((await agent.post(`/v1/orders/${order}/refunds`, { amount: 100 })).status).toBe(201);
    expect((await agent.get('/v1/gateways')).status).toBe(403);
    expect((await agent.get('/v1/members')).status).toBe(403);

    await app.store.run((db) => db.updateTable('provider_grants').set({ revoked_at: new Date() }).where('id', '=', grantId).execute());
    expect((await agent.get(`/v1/orders/${order}`)).status).toBe(401);
    expect((await login(app.url, { email: agentEmail, password: PASSWORD })).login.body.data.teams).toHaveLength(1);
  });
});
