/**
 * Account requests that race: two invitations to one address at the same moment (one 201, the
 * other 409 conflict, never a 500; one open invitation afterwards), and many wrong passwords at once
 * against one account (at most 5 are evaluated before the lock; the rest, and then the right
 * password, get 429 login_throttled until the lock ends). Run on PostgreSQL too, where the
 * requests really overlap.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { email } from './support/fixtures.ts';
import { login, SessionClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

const PASSWORD = 'correct horse battery';
// Every login costs a real scrypt (N=2^15), twenty of them at once here: give a busy machine time.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

let app: TestApp;
let team: TestTeam;
let owner: SessionClient;

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam('Glow');
  const ownerEmail = email('owner');
  await app.ctx.services.users.createUser({ teamId: team.teamId, email: ownerEmail, password: PASSWORD });
  owner = await login(app.url, { email: ownerEmail, password: PASSWORD });
});
afterAll(async () => app?.close());

const openInvitations = (address: string) =>
  app.store.run((db) =>
    db
      .selectFrom('invitations')
      .select(['id', 'role'])
      .where('team_id', '=', team.teamId)
      .where('email', '=', address)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .execute(),
  );

describe('two invitations to one address at the same moment', () => {
  it('answer 201 and 409 conflict with a clear message (never 500); one invitation stays open', async () => {
    const address = email('twice');
    // An open invitation both requests will try to replace.
    expect((await owner.post('/v1/invitations', { email: address, role: 'support_l1' })).status).toBe(201);
    const invite = (role: string) => owner.post('/v1/invitations', { email: address, role });

    const answers = await app.store.transaction(async (trx) => {
      // Hold the open invitation's row: both requests reach the statement that revokes it and wait there,
      // so they overlap for sure. (On PGlite, the one connection: they wait for it and run one after the other.)
      await trx.selectFrom('invitations').select('id').where('email', '=', address).where('revoked_at', 'is', null).forUpdate().execute();
      const pending = [invite('support_l2'), invite('account_manager')];
      if (app.store.kind === 'postgres') {
        for (let i = 0; i < 600; i++) {
          // pg_stat_activity is read once per transaction unless its snapshot is cleared.
          await sql`SELECT pg_stat_clear_snapshot()`.execute(trx);
          const waiting = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(trx);
          if (waiting.rows[0]!.n >= 2) break;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      return pending;
    });
    const [a, b] = await Promise.all(answers);
    const statuses = [a!.status, b!.status].sort();
    for (const r of [a!, b!]) {
      expect([201, 409], r.text).toContain(r.status);
      if (r.status === 409) {
        expect(r.body.error.code).toBe('conflict');
        expect(r.body.message).toContain(`Another invitation to ${address} was created at the same time`);
      }
    }
    // On PostgreSQL the two really overlapped: the second met the first's new row under the unique index.
    if (app.store.kind === 'postgres') expect(statuses).toEqual([201, 409]);
    else expect(statuses).toEqual([201, 201]);
    const open = await openInvitations(address);
    expect(open).toHaveLength(1);
    expect([a!, b!].filter((r) => r.status === 201).map((r) => r.body.data.id)).toContain(open[0]!.id);
  });
});

describe('login lock under parallel guesses', () => {
  it('20 wrong passwords at once: at most 5 answer invalid_credentials, the rest 429 login_throttled; then the right password is refused until the lock ends', async () => {
    const t = await app.newTeam();
    const address = email('target');
    await app.ctx.services.users.createUser({ teamId: t.teamId, email: address, password: PASSWORD });

    const guesses = await Promise.all(Array.from({ length: 20 }, (_, i) => new SessionClient(app.url).post('/v1/sessions', { email: address, password: `wrong guess number ${i}` })));
    const wrong = guesses.filter((r) => r.status === 401);
    const refused = guesses.filter((r) => r.status === 429);
    expect(wrong.length + refused.length, guesses.map((r) => `${r.status} ${r.text}`).join('\n')).toBe(20);
    expect(wrong.length).toBeGreaterThanOrEqual(1);
    expect(wrong.length).toBeLessThanOrEqual(5);
    for (const r of wrong) expect(r.body.error.code).toBe('invalid_credentials');
    for (const r of refused) {
      expect(r.body.error.code).toBe('login_throttled');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    }

    const right = await new SessionClient(app.url).post('/v1/sessions', { email: address, password: PASSWORD });
    expect(right.status).toBe(429);
    expect(right.body.error.code).toBe('login_throttled');
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(10 * 60);

    // The lock ends: the right password works, and the count starts again.
    await app.store.run((db) => db.updateTable('users').set({ locked_until: new Date(Date.now() - 1000) }).where('email', '=', address).execute());
    const after = await new SessionClient(app.url).post('/v1/sessions', { email: address, password: PASSWORD });
    expect(after.status, after.text).toBe(201);
    const row = await app.store.run((db) => db.selectFrom('users').select(['failed_logins', 'locked_until']).where('email', '=', address).executeTakeFirstOrThrow());
    expect(row.failed_logins).toBe(0);
    expect(row.locked_until).toBeNull();
  });

  it('a right password that still needs its two-factor code is not counted; a wrong code is', async () => {
    const t = await app.newTeam();
    const address = email('twofactor');
    await app.ctx.services.users.createUser({ teamId: t.teamId, email: address, password: PASSWORD });
    await app.store.run((db) => db.updateTable('users').set({ totp_enabled_at: new Date(), totp_secret_enc: null }).where('email', '=', address).execute());
    const failedLogins = async () =>
      (await app.store.run((db) => db.selectFrom('users').select(['failed_logins']).where('email', '=', address).executeTakeFirstOrThrow())).failed_logins;

    for (let i = 0; i < 6; i++) {
      const r = await new SessionClient(app.url).post('/v1/sessions', { email: address, password: PASSWORD });
      expect(r.body.error.code).toBe('totp_required');
    }
    expect(await failedLogins()).toBe(0);
    expect((await new SessionClient(app.url).post('/v1/sessions', { email: address, password: 'not the password' })).status).toBe(401);
    expect(await failedLogins()).toBe(1);
  });
});
