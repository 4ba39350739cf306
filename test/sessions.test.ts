import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as OTPAuth from 'otpauth';
import { email } from './support/fixtures.ts';
import { login, SessionClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

const PASSWORD = 'correct horse battery';
// Every login and password costs a real scrypt (N=2^15): on a busy shared machine these tests need more time than the default.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 120_000 });

let app: TestApp;
let team: TestTeam;
let ownerEmail: string;

async function owner(t: TestTeam, address = email('owner')) {
  await app.ctx.services.users.createUser({ teamId: t.teamId, email: address, password: PASSWORD, name: 'Olive Owner' });
  return address;
}

function cookieLine(lines: string[], name: string): string {
  const line = lines.find((l) => l.startsWith(`${name}=`));
  if (!line) throw new Error(`no ${name} cookie in ${JSON.stringify(lines)}`);
  return line;
}

beforeAll(async () => {
  app = await startTestApp({ TRUST_PROXY: 'true' });
  team = await app.newTeam('Glow');
  ownerEmail = await owner(team);
}, 120_000);
afterAll(async () => app?.close());

describe('login and the session cookie', () => {
  it('logs in: the cookie is HttpOnly, SameSite=Lax, Path=/, 12 h, not Secure over plain HTTP; the answer names the user, team, role, permissions and a CSRF token', async () => {
    const s = await login(app.url, { email: ownerEmail, password: PASSWORD });
    const line = cookieLine(s.lastSetCookie, 'checkstand_session');
    expect(line).toMatch(/HttpOnly/i);
    expect(line).toMatch(/SameSite=Lax/i);
    expect(line).toMatch(/Path=\//);
    expect(line).toMatch(/Max-Age=43200/);
    expect(line).not.toMatch(/Secure/i);
    expect(s.login.body.data).toMatchObject({
      object: 'session',
      kind: 'user',
      user: { email: ownerEmail, two_factor: false },
      team: { id: team.teamId, name: 'Glow', kind: 'merchant' },
      role: 'owner',
      affiliate_ids: null,
    });
    expect(s.login.body.data.permissions).toContain('billing:manage');
    expect(s.csrfToken).toMatch(/.{20,}/);

    const me = await s.get('/v1/session');
    expect(me.status).toBe(200);
    expect(me.body.data.user.email).toBe(ownerEmail);
    // The stored session holds only a hash of the cookie's secret.
    const secret = s.cookies.get('checkstand_session')!;
    const rows = await app.store.run((db) => db.selectFrom('sessions').select(['token_hash']).execute());
    expect(rows.some((r) => r.token_hash.includes(secret))).toBe(false);
  });

  it('sets Secure when the request came over HTTPS (X-Forwarded-Proto behind a trusted proxy) or with COOKIE_SECURE=true', async () => {
    const viaProxy = new SessionClient(app.url);
    const r = await viaProxy.post('/v1/sessions', { email: ownerEmail, password: PASSWORD }, { 'x-forwarded-proto': 'https' });
    expect(r.status).toBe(201);
    expect(cookieLine(viaProxy.lastSetCookie, 'checkstand_session')).toMatch(/; Secure/i);
    expect(cookieLine(viaProxy.lastSetCookie, 'checkstand_csrf')).toMatch(/; Secure/i);

    const forced = await startTestApp({ COOKIE_SECURE: 'true' });
    try {
      const t = await forced.newTeam();
      await forced.ctx.services.users.createUser({ teamId: t.teamId, email: 'secure@example.com', password: PASSWORD });
      const c = new SessionClient(forced.url);
      expect((await c.post('/v1/sessions', { email: 'secure@example.com', password: PASSWORD })).status).toBe(201);
      expect(cookieLine(c.lastSetCookie, 'checkstand_session')).toMatch(/; Secure/i);
    } finally {
      await forced.close();
    }
  }, 120_000);

  it('acts with the cookie alone (no bearer token), and refuses an unsafe request without the CSRF header (403 csrf_failed)', async () => {
    const s = await login(app.url, { email: ownerEmail, password: PASSWORD });
    expect((await s.get('/v1/orders')).status).toBe(200);
    const noCsrf = new SessionClient(app.url, { csrf: false });
    for (const [k, v] of s.cookies) noCsrf.cookies.set(k, v);
    const refused = await noCsrf.patch('/v1/team', { name: 'Hijacked' });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('csrf_failed');
    const wrong = await noCsrf.patch('/v1/team', { name: 'Hijacked' }, { 'x-csrf-token': 'not-the-token' });
    expect(wrong.body.error.code).toBe('csrf_failed');
    expect((await team.api.get('/v1/team')).body.data.name).toBe('Glow');
    // Another session's token does not fit this session.
    const other = await login(app.url, { email: ownerEmail, password: PASSWORD });
    const crossed = await noCsrf.patch('/v1/team', { name: 'Hijacked' }, { 'x-csrf-token': other.csrfToken! });
    expect(crossed.body.error.code).toBe('csrf_failed');
    // With its own token it goes through; a bearer token never needs one.
    const okay = await s.patch('/v1/team', { name: 'Glow' });
    expect(okay.status).toBe(200);
    expect((await team.api.patch('/v1/team', { name: 'Glow' })).status).toBe(200);
  });

  it('logs out: the cookie stops working at once', async () => {
    const s = await login(app.url, { email: ownerEmail, password: PASSWORD });
    const stolen = new Map(s.cookies);
    expect((await s.delete('/v1/session')).status).toBe(200);
    const replay = new SessionClient(app.url);
    for (const [k, v] of stolen) replay.cookies.set(k, v);
    const r = await replay.get('/v1/orders');
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('unauthenticated');
  });

  it('answers the same 401 invalid_credentials for an unknown address and a wrong password', async () => {
    const anon = new SessionClient(app.url);
    const unknown = await anon.post('/v1/sessions', { email: 'nobody@example.com', password: PASSWORD });
    const wrong = await anon.post('/v1/sessions', { email: ownerEmail, password: 'not the password at all' });
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    expect(unknown.body).toEqual(wrong.body);
    expect(unknown.body.error.code).toBe('invalid_credentials');
    expect(anon.cookies.has('checkstand_session')).toBe(false);
  });
});

describe('login throttling', () => {
  it('after 5 failures refuses the account for 15 minutes (429 login_throttled with Retry-After), even with the right password', async () => {
    const t = await app.newTeam();
    const address = await owner(t);
    const anon = new SessionClient(app.url);
    for (let i = 0; i < 5; i++) expect((await anon.post('/v1/sessions', { email: address, password: `wrong password ${i}` })).status).toBe(401);
    const locked = await anon.post('/v1/sessions', { email: address, password: PASSWORD });
    expect(locked.status).toBe(429);
    expect(locked.body.error.code).toBe('login_throttled');
    const retry = Number(locked.headers.get('retry-after'));
    expect(retry).toBeGreaterThan(14 * 60);
    expect(retry).toBeLessThanOrEqual(15 * 60);
    // Other accounts are not affected.
    expect((await anon.post('/v1/sessions', { email: ownerEmail, password: PASSWORD })).status).toBe(201);
    // Once the lock has run out, the right password works and the count starts again.
    await app.store.run((db) => db.updateTable('users').set({ locked_until: new Date(Date.now() - 1000) }).where('email', '=', address).execute());
    expect((await anon.post('/v1/sessions', { email: address, password: PASSWORD })).status).toBe(201);
    const row = await app.store.run((db) => db.selectFrom('users').select(['failed_logins']).where('email', '=', address).executeTakeFirstOrThrow());
    expect(row.failed_logins).toBe(0);
  });
});

describe('session lifetime', () => {
  it('ends after 12 hours idle and after 7 days whatever the activity', async () => {
    const s = await login(app.url, { email: ownerEmail, password: PASSWORD });
    const id = s.login.body.data && (await app.store.run((db) => db.selectFrom('sessions').select(['id']).orderBy('created_at', 'desc').executeTakeFirstOrThrow())).id;
    await app.store.run((db) => db.updateTable('sessions').set({ last_seen_at: new Date(Date.now() - 13 * 3600_000) }).where('id', '=', id).execute());
    expect((await s.get('/v1/session')).status).toBe(401);

    const s2 = await login(app.url, { email: ownerEmail, password: PASSWORD });
    const id2 = (await app.store.run((db) => db.selectFrom('sessions').select(['id']).orderBy('created_at', 'desc').executeTakeFirstOrThrow())).id;
    await app.store.run((db) => db.updateTable('sessions').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', id2).execute());
    expect((await s2.get('/v1/session')).status).toBe(401);
  });

  it('slides: a request after a while renews last_seen_at and sends the cookie again with a fresh Max-Age', async () => {
    const s = await login(app.url, { email: ownerEmail, password: PASSWORD });
    const id = (await app.store.run((db) => db.selectFrom('sessions').select(['id']).orderBy('created_at', 'desc').executeTakeFirstOrThrow())).id;
    const old = new Date(Date.now() - 3 * 3600_000);
    await app.store.run((db) => db.updateTable('sessions').set({ last_seen_at: old }).where('id', '=', id).execute());
    s.lastSetCookie = [];
    expect((await s.get('/v1/orders')).status).toBe(200);
    expect(cookieLine(s.lastSetCookie, 'checkstand_session')).toMatch(/Max-Age=43200/);
    const row = await app.store.run((db) => db.selectFrom('sessions').select(['last_seen_at']).where('id', '=', id).executeTakeFirstOrThrow());
    expect((row.last_seen_at as Date).getTime()).toBeGreaterThan(old.getTime() + 3600_000);
  });
});

describe('two-factor (TOTP)', () => {
  it('enrols with a code, then logging in needs the code; turning it off needs a code too', async () => {
    const t = await app.newTeam();
    const address = await owner(t);
    const s = await login(app.url, { email: address, password: PASSWORD });
    const start = await s.post('/v1/session/totp');
    expect(start.status).toBe(201);
    expect(start.body.data.otpauth_uri).toMatch(/^otpauth:\/\/totp\/Checkstand:/);
    const row = await app.store.run((db) => db.selectFrom('users').select(['totp_secret_enc']).where('email', '=', address).executeTakeFirstOrThrow());
    expect(row.totp_secret_enc).not.toContain(start.body.data.secret);
    const totp = OTPAuth.URI.parse(start.body.data.otpauth_uri) as OTPAuth.TOTP;

    const wrong = await s.post('/v1/session/totp/confirm', { code: '000000' === totp.generate() ? '111111' : '000000' });
    expect(wrong.status).toBe(422);
    expect(wrong.body.error.fields).toEqual([{ path: 'code', message: 'is not the current code of the authenticator app' }]);
    const on = await s.post('/v1/session/totp/confirm', { code: totp.generate() });
    expect(on.status).toBe(200);

    const anon = new SessionClient(app.url);
    const without = await anon.post('/v1/sessions', { email: address, password: PASSWORD });
    expect(without.status).toBe(401);
    expect(without.body.error.code).toBe('totp_required');
    const wrongCode = await anon.post('/v1/sessions', { email: address, password: PASSWORD, totp_code: totp.generate({ timestamp: Date.now() - 10 * 60_000 }) });
    expect(wrongCode.body.error.code).toBe('totp_invalid');
    // The confirming code's time step is used up: the next step's code (within the allowed drift) logs in, once.
    const next = totp.generate({ timestamp: Date.now() + 30_000 });
    const withCode = await anon.post('/v1/sessions', { email: address, password: PASSWORD, totp_code: next });
    expect(withCode.status, withCode.text).toBe(201);
    expect(withCode.body.data.user.two_factor).toBe(true);
    const replayed = await new SessionClient(app.url).post('/v1/sessions', { email: address, password: PASSWORD, totp_code: next });
    expect(replayed.status).toBe(401);
    expect(replayed.body.error.code).toBe('totp_invalid');
    // A minute later (the last used step moved back, as if time had passed), a current code works again.
    await app.store.run((db) => db.updateTable('users').set({ totp_last_step: Math.floor(Date.now() / 30_000) - 5 }).where('email', '=', address).execute());

    const bad = await anon.request('DELETE', '/v1/session/totp', { code: '12345x' });
    expect(bad.status, bad.text).toBe(422);
    const off = await anon.request('DELETE', '/v1/session/totp', { code: totp.generate() });
    expect(off.status).toBe(200);
    expect((await new SessionClient(app.url).post('/v1/sessions', { email: address, password: PASSWORD })).status).toBe(201);
  });

  it('is a browser session thing: an API token gets 400 session_required', async () => {
    const r = await team.api.post('/v1/session/totp');
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('session_required');
    // Who am I works for a token too.
    const me = await team.api.get('/v1/session');
    expect(me.body.data).toMatchObject({ kind: 'token', user: null, team: { id: team.teamId }, csrf_token: null });
  });
});
