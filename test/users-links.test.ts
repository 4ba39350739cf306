/**
 * The links in account mail lead somewhere: the invitation and password-reset mails name
 * /dashboard/accept-invitation?token=… and /dashboard/reset-password?token=…, which the server answers
 * with the dashboard (200 HTML). And POST /v1/password-resets answers before it does any work, for an
 * address with an account as for one without (no timing signal): it answers 202 while the account's
 * row is held locked by another transaction.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DASHBOARD_DIST } from '../src/app/dashboard.ts';
import { mailedLink } from './support/account-mail.ts';
import { email } from './support/fixtures.ts';
import { login, SessionClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

const PASSWORD = 'correct horse battery';
// Every login and password costs a real scrypt: on a busy shared machine these tests need more time than the default.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 180_000 });

let app: TestApp;
let team: TestTeam;
let dataDir: string;
let owner: SessionClient;

beforeAll(async () => {
  if (!fs.existsSync(path.join(DASHBOARD_DIST, 'index.html'))) execFileSync('npm', ['run', 'build:dashboard'], { stdio: 'inherit' });
  dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'checkstand-users-links-'));
  app = await startTestApp({ CHECKSTAND_DATA_DIR: dataDir, PUBLIC_BASE_URL: 'https://shop.example.test' });
  team = await app.newTeam('Glow');
  const ownerEmail = email('owner');
  await app.ctx.services.users.createUser({ teamId: team.teamId, email: ownerEmail, password: PASSWORD });
  owner = await login(app.url, { email: ownerEmail, password: PASSWORD });
});
afterAll(async () => {
  await app?.close();
  if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
});

async function expectDashboardAt(pathAndQuery: string): Promise<void> {
  const r = await fetch(app.url + pathAndQuery, { redirect: 'manual' });
  expect(r.status, pathAndQuery).toBe(200);
  expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(await r.text()).toBe(fs.readFileSync(path.join(DASHBOARD_DIST, 'index.html'), 'utf8'));
}

describe('the links in account mail', () => {
  it('the invitation link is the public base URL + /dashboard/accept-invitation?token=…, and that path answers the dashboard (200 HTML)', async () => {
    const address = email('invitee');
    const r = await owner.post('/v1/invitations', { email: address, role: 'support_l1' });
    expect(r.status, r.text).toBe(201);
    const link = await mailedLink(dataDir, address, 'accept-invitation');
    expect(link.href).toBe(`https://shop.example.test/dashboard/accept-invitation?token=${link.token}`);
    await expectDashboardAt(link.pathAndQuery);
    // The old path answered 404: nothing serves it.
    expect((await fetch(`${app.url}/accept-invitation?token=${link.token}`)).status).toBe(404);
    // The token in the link is the one the API accepts.
    const accepted = await new SessionClient(app.url).post('/v1/invitations/accept', { token: link.token, name: 'In Vitee', password: PASSWORD });
    expect(accepted.status, accepted.text).toBe(201);
  });

  it('the password reset link is the public base URL + /dashboard/reset-password?token=…, and that path answers the dashboard (200 HTML)', async () => {
    const address = email('forgetful');
    await app.ctx.services.users.createUser({ teamId: team.teamId, email: address, password: PASSWORD, role: 'support_l1' });
    expect((await new SessionClient(app.url).post('/v1/password-resets', { email: address })).status).toBe(202);
    const link = await mailedLink(dataDir, address, 'reset-password');
    expect(link.href).toBe(`https://shop.example.test/dashboard/reset-password?token=${link.token}`);
    await expectDashboardAt(link.pathAndQuery);
    expect((await fetch(`${app.url}/reset-password?token=${link.token}`)).status).toBe(404);
    const done = await new SessionClient(app.url).post('/v1/password-resets/confirm', { token: link.token, password: 'a brand new passphrase' });
    expect(done.status, done.text).toBe(200);
  });
});

describe('POST /v1/password-resets', () => {
  it('answers 202 before touching the database, for an account as for an unknown address: it answers while the account row is locked, and mails the link after', async () => {
    const address = email('locked');
    await app.ctx.services.users.createUser({ teamId: team.teamId, email: address, password: PASSWORD, role: 'support_l1' });
    const ask = (to: string) =>
      fetch(`${app.url}/v1/password-resets`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: to }),
        // Answering waits for nothing: if it waited for the lock held below, this would give up instead of hanging the test.
        signal: AbortSignal.timeout(45_000),
      });
    const answers = await app.store.transaction(async (trx) => {
      // Holds the account's row (on PGlite: the only connection). Writing a reset link for it has to wait.
      await trx.selectFrom('users').select('id').where('email', '=', address).forUpdate().execute();
      const known = await ask(address);
      const unknown = await ask(email('nobody'));
      const resets = await trx
        .selectFrom('password_resets')
        .innerJoin('users', 'users.id', 'password_resets.user_id')
        .select('password_resets.id')
        .where('users.email', '=', address)
        .execute();
      return { known: { status: known.status, body: await known.json() }, unknown: { status: unknown.status, body: await unknown.json() }, resetsWhileLocked: resets.length };
    });
    expect(answers.known.status).toBe(202);
    expect(answers.unknown).toEqual(answers.known);
    expect(answers.resetsWhileLocked).toBe(0);
    // Once the lock is gone, the link is written and mailed.
    const link = await mailedLink(dataDir, address, 'reset-password');
    expect(link.token).toMatch(/^csr_/);
  });
});
