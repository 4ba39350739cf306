/**
 * Account requests that race: two invitations to one address at the same moment (one 201, the
 * other 409 conflict, never a 500; one open invitation afterwards). Run on PostgreSQL too, where the
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
