import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/app/ids.ts';
import { utcMonth } from '../src/modules/gateways/service.ts';
import { CANARY_PAN, email, seedFunnel } from './support/fixtures.ts';
import { type ApiResponse, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let teamA: TestTeam;
let teamB: TestTeam;

/** Every response body this file receives: none may contain a credential or a card number. */
const seen: string[] = [];

beforeAll(async () => {
  app = await startTestApp();
  teamA = await app.newTeam('Team A');
  teamB = await app.newTeam('Team B');
});
afterAll(async () => {
  await app?.close();
});

async function track(res: Promise<ApiResponse>): Promise<ApiResponse> {
  const r = await res;
  seen.push(r.text);
  return r;
}

function fieldPaths(res: ApiResponse): string[] {
  return (res.body?.error?.fields ?? []).map((f: { path: string }) => f.path);
}

function expect422(res: ApiResponse, ...paths: string[]) {
  expect(res.status, res.text).toBe(422);
  expect(res.body).toMatchObject({ success: false, data: null, error: { code: 'validation_failed', type: 'invalid_request_error' } });
  expect(fieldPaths(res)).toEqual(expect.arrayContaining(paths));
}

async function created(res: Promise<ApiResponse>) {
  const r = await track(res);
  expect(r.status, r.text).toBe(201);
  expect(r.body.success).toBe(true);
  return r.body.data;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const KEY_A = 'nmi-security-key-AAAA-1111-secret-7f3c';
const KEY_B = 'nmi-rotated-key-BBBB-2222-secret-9d1e';
const SHORT_KEY = 'tiny-key';

function gatewayBody(over: Record<string, unknown> = {}) {
  return { name: 'NMI main', kind: 'nmi', credentials: { security_key: KEY_A }, ...over };
}

async function gatewayRow(id: string) {
  return app.store.run((db) => db.selectFrom('gateways').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
}

describe('gateways', () => {
  let gw: any;

  beforeAll(async () => {
    gw = await created(teamA.api.post('/v1/gateways', gatewayBody()));
  });

  it('creates a gateway with defaults and shows only a hint of the credentials', async () => {
    expect(gw).toEqual({
      object: 'gateway',
      id: expect.stringMatching(/^gw_[0-9A-Za-z]+$/),
      name: 'NMI main',
      kind: 'nmi',
      base_url: 'https://secure.nmi.com',
      test_mode: false,
      is_active: true,
      monthly_cap: null,
      descriptor: null,
      credentials_hint: { security_key: '…7f3c' },
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(gw).not.toHaveProperty('credentials');
    expect(gw).not.toHaveProperty('team_id');
  });

  it('takes every field, and drops a trailing slash from base_url', async () => {
    const full = await created(
      teamA.api.post(
        '/v1/gateways',
        gatewayBody({
          name: 'NMI sandbox',
          base_url: 'http://127.0.0.1:4010/',
          credentials: { security_key: SHORT_KEY },
          test_mode: true,
          is_active: false,
          monthly_cap: 5_000_000,
          descriptor: 'CHECKSTAND*SERUM',
        }),
      ),
    );
    expect(full).toMatchObject({
      base_url: 'http://127.0.0.1:4010',
      test_mode: true,
      is_active: false,
      monthly_cap: 5_000_000,
      descriptor: 'CHECKSTAND*SERUM',
      // a short key is masked entirely: its last 4 would be half of it
      credentials_hint: { security_key: '…' },
    });
  });

  it('reads back by id and in the list, newest first', async () => {
    const one = await track(teamA.api.get(`/v1/gateways/${gw.id}`));
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ success: true, message: 'OK', data: gw });
    const list = await track(teamA.api.get('/v1/gateways'));
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ success: true, message: 'OK', has_more: false });
    expect(list.body.data.map((g: any) => g.id)).toHaveLength(2);
    expect(list.body.data[1]).toEqual(gw);
  });

  it('stores the credentials encrypted; account() decrypts them', async () => {
    const row = await gatewayRow(gw.id);
    expect(JSON.stringify(row)).not.toContain(KEY_A);
    expect(row.credentials).toMatch(/^v1:/);
    expect(app.ctx.services.gateways.account(row)).toEqual({
      baseUrl: 'https://secure.nmi.com',
      credentials: { security_key: KEY_A },
      testMode: false,
      descriptor: null,
    });
    const found = await app.store.run((db) => app.ctx.services.gateways.findGateway(db, teamA.teamId, gw.id));
    expect(found?.id).toBe(gw.id);
    expect(await app.store.run((db) => app.ctx.services.gateways.findGateway(db, teamB.teamId, gw.id))).toBeUndefined();
  });

  it('PATCH changes only what is sent; credentials are replaced as a whole', async () => {
    const g = await created(teamA.api.post('/v1/gateways', gatewayBody({ name: 'To patch', monthly_cap: 1000 })));
    const renamed = await track(teamA.api.patch(`/v1/gateways/${g.id}`, { name: 'Patched', test_mode: true, descriptor: 'SHOP*ONE', monthly_cap: null }));
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: 'Patched', test_mode: true, descriptor: 'SHOP*ONE', monthly_cap: null, is_active: true, base_url: g.base_url });
    expect(Date.parse(renamed.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(g.updated_at));

    const rotated = await track(teamA.api.patch(`/v1/gateways/${g.id}`, { credentials: { security_key: KEY_B }, base_url: 'https://gw.example.test/api/' }));
    expect(rotated.body.data).toMatchObject({ name: 'Patched', credentials_hint: { security_key: '…9d1e' }, base_url: 'https://gw.example.test/api' });
    const row = await gatewayRow(g.id);
    expect(JSON.stringify(row)).not.toContain(KEY_B);
    expect(app.ctx.services.gateways.account(row)).toMatchObject({ baseUrl: 'https://gw.example.test/api', credentials: { security_key: KEY_B }, testMode: true, descriptor: 'SHOP*ONE' });

    const cleared = await track(teamA.api.patch(`/v1/gateways/${g.id}`, { descriptor: null, is_active: false }));
    expect(cleared.body.data).toMatchObject({ descriptor: null, is_active: false, test_mode: true });
    const unchanged = await track(teamA.api.patch(`/v1/gateways/${g.id}`, {}));
    expect(unchanged.status).toBe(200);
    expect(unchanged.body.data).toEqual(cleared.body.data);
  });

  it('an Idempotency-Key replay and the stored idempotent response hold no credentials', async () => {
    const headers = { 'idempotency-key': 'gw-once' };
    const first = await track(teamA.api.post('/v1/gateways', gatewayBody({ name: 'Once' }), headers));
    const again = await track(teamA.api.post('/v1/gateways', gatewayBody({ name: 'Once' }), headers));
    expect(first.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    const stored = await app.store.run((db) => db.selectFrom('idempotency_keys').selectAll().where('key', '=', 'gw-once').execute());
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored)).not.toContain(KEY_A);
  });

  it('validates with field paths', async () => {
    expect422(await track(teamA.api.post('/v1/gateways', gatewayBody({ base_url: 'not a url' }))), 'base_url');
    expect422(await track(teamA.api.post('/v1/gateways', gatewayBody({ base_url: 'ftp://secure.nmi.com' }))), 'base_url');
    expect422(await track(teamA.api.post('/v1/gateways', gatewayBody({ credentials: {} }))), 'credentials.security_key');
    expect422(await track(teamA.api.post('/v1/gateways', gatewayBody({ credentials: { security_key: '' } }))), 'credentials.security_key');
    expect422(await track(teamA.api.post('/v1/gateways', gatewayBody({ credentials: { security_key: KEY_A, api_key: 'x' } }))), 'credentials.api_key');
    expect422(await track(teamA.api.post('/v1/gateways', { name: 'No creds', kind: 'nmi' })), 'credentials');
    expect422(await track(teamA.api.post('/v1/gateways', gatewayBody({ kind: 'stripe' }))), 'kind');
    expect422(await track(teamA.api.post('/v1/gateways', gatewayBody({ kind: undefined }))), 'kind');
    expect422(await track(teamA.api.post('/v1/gateways', gatewayBody({ monthly_cap: 0 }))), 'monthly_cap');
    expect422(await track(teamA.api.post('/v1/gateways', gatewayBody({ monthly_cap: 10.5 }))), 'monthly_cap');
    expect422(await track(teamA.api.post('/v1/gateways', gatewayBody({ name: ' ' }))), 'name');
    const unknown = await track(teamA.api.post('/v1/gateways', gatewayBody({ id: 'gw_mine', credentials_hint: {} })));
    expect422(unknown, 'id', 'credentials_hint');
    expect(unknown.body.error.fields).toContainEqual({ path: 'id', message: 'is not a field you can set here' });
    expect422(await track(teamA.api.patch(`/v1/gateways/${gw.id}`, { kind: 'nmi' })), 'kind');
    expect422(await track(teamA.api.patch(`/v1/gateways/${gw.id}`, { base_url: 'javascript:alert(1)' })), 'base_url');
    expect422(await track(teamA.api.patch(`/v1/gateways/${gw.id}`, { credentials: { securitykey: KEY_B } })), 'credentials.security_key', 'credentials.securitykey');
    // nothing above changed the gateway
    expect((await track(teamA.api.get(`/v1/gateways/${gw.id}`))).body.data).toEqual(gw);
  });

  it('documents the routes in OpenAPI under payments-config', async () => {
    const res = await app.anonymous.get('/openapi.json');
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    const spec = res.body;
    expect(spec.tags.map((t: any) => t.name)).toContain('payments-config');
    for (const path of ['/v1/gateways', '/v1/payment-orchestrators', '/v1/bin-blacklist', '/v1/test-cards']) {
      expect(spec.paths[path].post.tags, path).toEqual(['payments-config']);
      expect(spec.paths[path].get.summary, path).toBeTruthy();
    }
    expect(spec.paths['/v1/gateways/{id}'].patch.requestBody).toBeTruthy();
    expect(spec.paths['/v1/payment-orchestrators/{id}'].get).toBeTruthy();
    expect(spec.paths['/v1/bin-blacklist/{id}'].delete).toBeTruthy();
    expect(spec.paths['/v1/test-cards/{id}'].delete).toBeTruthy();
  });
});

describe('gateways: pagination', () => {
  let team: TestTeam;
  let ids: string[];

  beforeAll(async () => {
    team = await app.newTeam('Paging');
    ids = [];
    for (let i = 0; i < 25; i++) ids.push((await created(team.api.post('/v1/gateways', gatewayBody({ name: `G${i}` })))).id);
    ids.reverse();
  });

  it('pages of 10: 10, 10, 5, newest first, without duplicates', async () => {
    const pages: { ids: string[]; has_more: boolean }[] = [];
    let after: string | undefined;
    for (;;) {
      const r = await track(team.api.get(`/v1/gateways?limit=10${after ? `&starting_after=${after}` : ''}`));
      expect(r.status, r.text).toBe(200);
      const page = { ids: r.body.data.map((g: any) => g.id), has_more: r.body.has_more };
      pages.push(page);
      if (!page.has_more) break;
      after = page.ids[page.ids.length - 1];
    }
    expect(pages.map((p) => [p.ids.length, p.has_more])).toEqual([
      [10, true],
      [10, true],
      [5, false],
    ]);
    expect(pages.flatMap((p) => p.ids)).toEqual(ids);
  });

  it('refuses an unknown or foreign cursor and bad limits', async () => {
    expect422(await team.api.get('/v1/gateways?starting_after=gw_unknown'), 'starting_after');
    const foreign = await created(teamB.api.post('/v1/gateways', gatewayBody({ name: 'B cursor' })));
    expect422(await team.api.get(`/v1/gateways?starting_after=${foreign.id}`), 'starting_after');
    expect422(await team.api.get('/v1/gateways?limit=0'), 'query.limit');
    expect422(await team.api.get('/v1/gateways?limit=101'), 'query.limit');
    expect422(await team.api.get('/v1/gateways?status=active'), 'query.status');
  });
});

describe('payment orchestrators', () => {
  let g1: any;
  let g2: any;
  let g3: any;
  let foreign: any;

  beforeAll(async () => {
    g1 = await created(teamA.api.post('/v1/gateways', gatewayBody({ name: 'R1' })));
    g2 = await created(teamA.api.post('/v1/gateways', gatewayBody({ name: 'R2' })));
    g3 = await created(teamA.api.post('/v1/gateways', gatewayBody({ name: 'R3', is_active: false })));
    foreign = await created(teamB.api.post('/v1/gateways', gatewayBody({ name: 'B gateway' })));
  });

  it('creates a router with members, defaults filled, members by priority', async () => {
    const r = await created(
      teamA.api.post('/v1/payment-orchestrators', {
        name: 'Main router',
        members: [{ gateway_id: g1.id, priority: 2, weight: 3, monthly_cap: 100_000 }, { gateway_id: g2.id }],
      }),
    );
    expect(r).toEqual({
      object: 'payment_orchestrator',
      id: expect.stringMatching(/^po_[0-9A-Za-z]+$/),
      name: 'Main router',
      strategy: 'priority',
      max_attempts: 3,
      is_active: true,
      members: [
        { id: expect.stringMatching(/^pom_/), gateway_id: g2.id, priority: 1, weight: 1, monthly_cap: null, month_to_date_volume: 0 },
        { id: expect.stringMatching(/^pom_/), gateway_id: g1.id, priority: 2, weight: 3, monthly_cap: 100_000, month_to_date_volume: 0 },
      ],
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    const one = await track(teamA.api.get(`/v1/payment-orchestrators/${r.id}`));
    expect(one.body).toEqual({ success: true, message: 'OK', data: r });
    const list = await track(teamA.api.get('/v1/payment-orchestrators'));
    expect(list.body.data.find((x: any) => x.id === r.id)).toEqual(r);
  });

  it('refuses a member gateway of another team, an unknown one and a duplicate: 422 on the member', async () => {
    const before = await app.store.run((db) => db.selectFrom('payment_routers').select('id').where('team_id', '=', teamA.teamId).execute());
    const base = { name: 'Bad router', strategy: 'weighted' };
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { ...base, members: [{ gateway_id: g1.id }, { gateway_id: foreign.id }] })), 'members.1.gateway_id');
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { ...base, members: [{ gateway_id: 'gw_doesnotexist' }] })), 'members.0.gateway_id');
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { ...base, members: [{ gateway_id: 'cmp_123' }] })), 'members.0.gateway_id');
    const dup = await track(teamA.api.post('/v1/payment-orchestrators', { ...base, members: [{ gateway_id: g1.id }, { gateway_id: g2.id }, { gateway_id: g1.id, priority: 2 }] }));
    expect422(dup, 'members.2.gateway_id');
    expect(fieldPaths(dup)).not.toContain('members.0.gateway_id');
    const after = await app.store.run((db) => db.selectFrom('payment_routers').select('id').where('team_id', '=', teamA.teamId).execute());
    expect(after).toEqual(before);
  });

  it('validates the router fields', async () => {
    const members = [{ gateway_id: g1.id }];
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { name: 'x', members: [] })), 'members');
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { name: 'x' })), 'members');
    const many = Array.from({ length: 21 }, () => ({ gateway_id: g1.id }));
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { name: 'x', members: many })), 'members');
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { name: 'x', members, max_attempts: 11 })), 'max_attempts');
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { name: 'x', members, max_attempts: 0 })), 'max_attempts');
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { name: 'x', members, strategy: 'random' })), 'strategy');
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { name: 'x', members: [{ gateway_id: g1.id, priority: 0, weight: -1 }] })), 'members.0.priority', 'members.0.weight');
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { name: 'x', members: [{ gateway_id: g1.id, router_id: 'po_x' }] })), 'members.0.router_id');
    expect422(await track(teamA.api.post('/v1/payment-orchestrators', { members })), 'name');
  });

  it('PATCH replaces the member list as a whole; a refused PATCH changes nothing', async () => {
    const r = await created(teamA.api.post('/v1/payment-orchestrators', { name: 'Replace me', members: [{ gateway_id: g1.id }, { gateway_id: g2.id, priority: 2 }] }));
    const patched = await track(
      teamA.api.patch(`/v1/payment-orchestrators/${r.id}`, { strategy: 'weighted', max_attempts: 2, members: [{ gateway_id: g3.id, weight: 5 }] }),
    );
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({ name: 'Replace me', strategy: 'weighted', max_attempts: 2, is_active: true });
    expect(patched.body.data.members).toEqual([{ id: expect.stringMatching(/^pom_/), gateway_id: g3.id, priority: 1, weight: 5, monthly_cap: null, month_to_date_volume: 0 }]);
    const rows = await app.store.run((db) => db.selectFrom('payment_router_members').selectAll().where('router_id', '=', r.id).execute());
    expect(rows.map((m) => m.gateway_id)).toEqual([g3.id]);

    expect422(await track(teamA.api.patch(`/v1/payment-orchestrators/${r.id}`, { name: 'Nope', members: [{ gateway_id: g1.id }, { gateway_id: foreign.id }] })), 'members.1.gateway_id');
    expect422(await track(teamA.api.patch(`/v1/payment-orchestrators/${r.id}`, { members: [{ gateway_id: g1.id }, { gateway_id: g1.id }] })), 'members.1.gateway_id');
    expect422(await track(teamA.api.patch(`/v1/payment-orchestrators/${r.id}`, { members: [] })), 'members');
    const unchanged = await track(teamA.api.get(`/v1/payment-orchestrators/${r.id}`));
    expect(unchanged.body.data).toEqual(patched.body.data);

    const renamed = await track(teamA.api.patch(`/v1/payment-orchestrators/${r.id}`, { name: 'Renamed', is_active: false }));
    expect(renamed.body.data).toMatchObject({ name: 'Renamed', is_active: false, members: patched.body.data.members });
    const empty = await track(teamA.api.patch(`/v1/payment-orchestrators/${r.id}`, {}));
    expect(empty.body.data).toEqual(renamed.body.data);
  });

  it('findRouter gives the payment core the router, members by priority then id, each with its gateway row', async () => {
    const r = await created(
      teamA.api.post('/v1/payment-orchestrators', {
        name: 'For the core',
        members: [{ gateway_id: g3.id, priority: 3 }, { gateway_id: g1.id, priority: 1 }, { gateway_id: g2.id, priority: 1 }],
      }),
    );
    const gateways = app.ctx.services.gateways;
    const found = await app.store.transaction((trx) => gateways.findRouter(trx, teamA.teamId, r.id));
    expect(found?.router).toMatchObject({ id: r.id, name: 'For the core', strategy: 'priority', max_attempts: 3, team_id: teamA.teamId });
    const firstTwo = [g1.id, g2.id].map((gid) => r.members.find((m: any) => m.gateway_id === gid).id).sort();
    expect(found?.members.map((m) => m.id)).toEqual([...firstTwo, r.members.find((m: any) => m.gateway_id === g3.id).id]);
    for (const m of found!.members) {
      expect(m.gateway.id).toBe(m.gateway_id);
      expect(m.router_id).toBe(r.id);
    }
    expect(found?.members[2]?.gateway).toMatchObject({ name: 'R3', is_active: false });
    expect(gateways.account(found!.members[0]!.gateway).credentials).toEqual({ security_key: KEY_A });
    expect(await app.store.run((db) => gateways.findRouter(db, teamB.teamId, r.id))).toBeUndefined();
  });
});

describe('BIN blacklist', () => {
  it('adds prefixes of 6 to 8 digits; a duplicate is 409; another team may list the same', async () => {
    const six = await created(teamA.api.post('/v1/bin-blacklist', { prefix: '411111', reason: 'fraud ring' }));
    expect(six).toEqual({ object: 'bin_blacklist_entry', id: expect.stringMatching(/^bin_/), prefix: '411111', reason: 'fraud ring', created_at: expect.stringMatching(ISO) });
    const eight = await created(teamA.api.post('/v1/bin-blacklist', { prefix: '55554444' }));
    expect(eight.reason).toBeNull();
    const dup = await track(teamA.api.post('/v1/bin-blacklist', { prefix: '411111', reason: 'again' }));
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ success: false, data: null, error: { code: 'conflict', fields: [{ path: 'prefix' }] } });
    await created(teamB.api.post('/v1/bin-blacklist', { prefix: '411111' }));
    const list = await track(teamA.api.get('/v1/bin-blacklist'));
    expect(list.body.data.map((b: any) => b.prefix)).toEqual(['55554444', '411111']);
  });

  it('isBinBlocked matches any listed prefix the card starts with, within the team', async () => {
    const gateways = app.ctx.services.gateways;
    const blocked = (teamId: string, pan: string) => app.store.run((db) => gateways.isBinBlocked(db, teamId, pan));
    expect(await blocked(teamA.teamId, '4111111111111111')).toMatchObject({ prefix: '411111', team_id: teamA.teamId });
    expect(await blocked(teamA.teamId, '5555444433331111')).toMatchObject({ prefix: '55554444' });
    expect(await blocked(teamA.teamId, '5555443333331111')).toBeUndefined();
    expect(await blocked(teamA.teamId, '4242424242424242')).toBeUndefined();
    expect(await blocked(teamA.teamId, '41111')).toBeUndefined();
    const t = await app.newTeam('BIN only');
    expect(await blocked(t.teamId, '5555444433331111')).toBeUndefined();
    // the longest listed prefix wins when several match
    await created(teamA.api.post('/v1/bin-blacklist', { prefix: '4111111', reason: 'narrower' }));
    expect(await blocked(teamA.teamId, '4111111111111111')).toMatchObject({ prefix: '4111111' });
  });

  it('validates the prefix', async () => {
    for (const prefix of ['41111', '411111111', '41111a', ' 411111', 411111]) {
      expect422(await track(teamA.api.post('/v1/bin-blacklist', { prefix })), 'prefix');
    }
    expect422(await track(teamA.api.post('/v1/bin-blacklist', {})), 'prefix');
    expect422(await track(teamA.api.post('/v1/bin-blacklist', { prefix: '222100', team_id: teamB.teamId })), 'team_id');
  });

  it('DELETE answers the deleted entry and unblocks; a second DELETE is 404', async () => {
    const entry = await created(teamA.api.post('/v1/bin-blacklist', { prefix: '601100', reason: 'test' }));
    const pan = '6011000990139424';
    expect(await app.store.run((db) => app.ctx.services.gateways.isBinBlocked(db, teamA.teamId, pan))).toBeTruthy();
    const del = await track(teamA.api.delete(`/v1/bin-blacklist/${entry.id}`));
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ success: true, message: 'OK', data: { ...entry, deleted: true } });
    expect(await app.store.run((db) => app.ctx.services.gateways.isBinBlocked(db, teamA.teamId, pan))).toBeUndefined();
    expect((await track(teamA.api.get('/v1/bin-blacklist?limit=100'))).body.data.map((b: any) => b.id)).not.toContain(entry.id);
    const again = await track(teamA.api.delete(`/v1/bin-blacklist/${entry.id}`));
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('not_found');
  });
});

describe('test cards', () => {
  const OTHER_PAN = '4242424242424242';

  it('stores only a keyed hash and the last 4; the number never comes back', async () => {
    const card = await created(teamA.api.post('/v1/test-cards', { card_number: CANARY_PAN, label: 'QA canary' }));
    expect(card).toEqual({ object: 'test_card', id: expect.stringMatching(/^tc_/), last4: '5556', label: 'QA canary', created_at: expect.stringMatching(ISO) });
    const rows = await app.store.run((db) => db.selectFrom('test_cards').selectAll().where('team_id', '=', teamA.teamId).execute());
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(CANARY_PAN);
    expect(JSON.stringify(rows)).not.toContain(CANARY_PAN.slice(0, 12));
    expect(rows[0]!.card_hash).toMatch(/^[0-9a-f]{64}$/);
    const list = await track(teamA.api.get('/v1/test-cards'));
    expect(list.body).toMatchObject({ success: true, has_more: false, data: [card] });
  });

  it('isTestCard: true for a listed number in any format, false otherwise and for other teams', async () => {
    const gateways = app.ctx.services.gateways;
    const isTest = (teamId: string, pan: string) => app.store.run((db) => gateways.isTestCard(db, teamId, pan));
    expect(await isTest(teamA.teamId, CANARY_PAN)).toBe(true);
    expect(await isTest(teamA.teamId, '4000 0566 5566 5556')).toBe(true);
    expect(await isTest(teamA.teamId, OTHER_PAN)).toBe(false);
    expect(await isTest(teamB.teamId, CANARY_PAN)).toBe(false);
  });

  it('a number already listed is 409, whatever its spacing, and the message does not echo it', async () => {
    const dup = await track(teamA.api.post('/v1/test-cards', { card_number: '4000-0566-5566-5556', label: 'again' }));
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ success: false, data: null, error: { code: 'conflict', fields: [{ path: 'card_number' }] } });
    expect(dup.text).not.toMatch(/5556/);
    await created(teamB.api.post('/v1/test-cards', { card_number: CANARY_PAN }));
  });

  it('refuses invalid numbers with a 422 on card_number that does not repeat them', async () => {
    for (const card_number of ['4000056655665557', '4111 1111 1111 1112', '12345678901', '41111111111111111111', 'abcd', 4111111111111111]) {
      const r = await track(teamA.api.post('/v1/test-cards', { card_number }));
      expect422(r, 'card_number');
      expect(r.text).not.toContain(String(card_number));
    }
    expect422(await track(teamA.api.post('/v1/test-cards', { label: 'no number' })), 'card_number');
    expect422(await track(teamA.api.post('/v1/test-cards', { card_number: OTHER_PAN, last4: '4242' })), 'last4');
  });

  it('DELETE answers the deleted card and unlists it; a second DELETE is 404', async () => {
    const card = await created(teamA.api.post('/v1/test-cards', { card_number: OTHER_PAN }));
    expect(card).toMatchObject({ last4: '4242', label: null });
    const del = await track(teamA.api.delete(`/v1/test-cards/${card.id}`));
    expect(del.status, del.text).toBe(200);
    expect(del.body.data).toEqual({ ...card, deleted: true });
    expect(await app.store.run((db) => app.ctx.services.gateways.isTestCard(db, teamA.teamId, OTHER_PAN))).toBe(false);
    expect((await track(teamA.api.delete(`/v1/test-cards/${card.id}`))).status).toBe(404);
  });
});

describe('another team gets 404 and changes nothing', () => {
  it('on GET, PATCH and DELETE of every resource', async () => {
    const gw = await created(teamA.api.post('/v1/gateways', gatewayBody({ name: 'A only' })));
    const router = await created(teamA.api.post('/v1/payment-orchestrators', { name: 'A router', members: [{ gateway_id: gw.id }] }));
    const bin = await created(teamA.api.post('/v1/bin-blacklist', { prefix: '37828200' }));
    const card = await created(teamA.api.post('/v1/test-cards', { card_number: '378282246310005' }));
    const bGateway = await created(teamB.api.post('/v1/gateways', gatewayBody({ name: 'B own' })));

    const attempts: [string, string, unknown][] = [
      ['GET', `/v1/gateways/${gw.id}`, undefined],
      ['PATCH', `/v1/gateways/${gw.id}`, { name: 'Hijacked', credentials: { security_key: 'stolen-key-000000' }, base_url: 'https://evil.example' }],
      ['PATCH', `/v1/gateways/${gw.id}`, {}],
      ['GET', `/v1/payment-orchestrators/${router.id}`, undefined],
      ['PATCH', `/v1/payment-orchestrators/${router.id}`, { name: 'Hijacked', members: [{ gateway_id: bGateway.id }] }],
      ['PATCH', `/v1/payment-orchestrators/${router.id}`, {}],
      ['DELETE', `/v1/bin-blacklist/${bin.id}`, undefined],
      ['DELETE', `/v1/test-cards/${card.id}`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const r = await track(teamB.api.request(method, path, body));
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body).toMatchObject({ success: false, data: null, error: { code: 'not_found' } });
    }
    // GET on the list-only resources is not a route: it answers 404 for everyone.
    expect((await teamB.api.get(`/v1/test-cards/${card.id}`)).status).toBe(404);

    expect((await track(teamA.api.get(`/v1/gateways/${gw.id}`))).body.data).toEqual(gw);
    expect(app.ctx.services.gateways.account(await gatewayRow(gw.id)).credentials).toEqual({ security_key: KEY_A });
    expect((await track(teamA.api.get(`/v1/payment-orchestrators/${router.id}`))).body.data).toEqual(router);
    expect((await track(teamA.api.get('/v1/bin-blacklist?limit=100'))).body.data).toContainEqual(bin);
    expect((await track(teamA.api.get('/v1/test-cards?limit=100'))).body.data).toContainEqual(card);
    for (const path of ['gateways', 'payment-orchestrators', 'bin-blacklist', 'test-cards']) {
      const list = await track(teamB.api.get(`/v1/${path}?limit=100`));
      expect(list.status).toBe(200);
      const own = new Set([gw.id, router.id, bin.id, card.id]);
      for (const item of list.body.data) expect(own.has(item.id), path).toBe(false);
    }
  });
});

describe('monthToDateVolume', () => {
  it("sums this UTC month's approved sales through that gateway, for the team only", async () => {
    const funnel = await seedFunnel(app, teamA.teamId);
    const lead = await track(
      teamA.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('mtd') }, products: [{ offer_id: funnel.offers.serum, quantity: 1 }] }),
    );
    expect(lead.status, lead.text).toBe(201);
    const orderId: string = lead.body.data.order_number;
    // Team B's sale through the same gateway id is on an order of its own (a row cannot name another team's order).
    const funnelB = await seedFunnel(app, teamB.teamId);
    const leadB = await track(
      teamB.api.post('/checkout/leads', { campaign_id: funnelB.campaignId, customer: { email: email('mtd-b') }, products: [{ offer_id: funnelB.offers.serum, quantity: 1 }] }),
    );
    expect(leadB.status, leadB.text).toBe(201);
    const gw = await created(teamA.api.post('/v1/gateways', gatewayBody({ name: 'Volume' })));
    const other = await created(teamA.api.post('/v1/gateways', gatewayBody({ name: 'Other volume' })));

    const now = new Date();
    const { from } = utcMonth(now);
    const lastMonth = new Date(from.getTime() - 3_600_000);
    const tx = (over: Record<string, unknown>) => ({
      id: newId('transaction'),
      team_id: teamA.teamId,
      order_id: orderId,
      type: 'sale',
      status: 'approved',
      amount: 0,
      currency: 'USD',
      gateway_id: gw.id,
      ...over,
    });
    await app.store.run((db) =>
      db
        .insertInto('transactions')
        .values([
          tx({ amount: 1000 }),
          tx({ amount: 2500 }),
          tx({ amount: 400, created_at: from }),
          tx({ amount: 700, status: 'declined' }),
          tx({ amount: 300, type: 'refund' }),
          tx({ amount: 900, created_at: lastMonth }),
          tx({ amount: 4000, gateway_id: other.id }),
          tx({ amount: 8000, team_id: teamB.teamId, order_id: leadB.body.data.order_number }),
        ])
        .execute(),
    );

    const gateways = app.ctx.services.gateways;
    expect(await app.store.run((db) => gateways.monthToDateVolume(db, teamA.teamId, gw.id))).toBe(3900);
    expect(await app.store.transaction((trx) => gateways.monthToDateVolume(trx, teamA.teamId, gw.id, now))).toBe(3900);
    expect(await app.store.run((db) => gateways.monthToDateVolume(db, teamA.teamId, other.id))).toBe(4000);
    expect(await app.store.run((db) => gateways.monthToDateVolume(db, teamA.teamId, gw.id, lastMonth))).toBe(900);
    expect(await app.store.run((db) => gateways.monthToDateVolume(db, teamB.teamId, gw.id))).toBe(8000);
    expect(await app.store.run((db) => gateways.monthToDateVolume(db, teamA.teamId, 'gw_none'))).toBe(0);
  });
});

describe('secrets never leave', () => {
  it('no response and no log line carries a security key or a test card number', () => {
    expect(seen.length).toBeGreaterThan(50);
    const logs = app.logs.join('\n');
    for (const secret of [KEY_A, KEY_B, CANARY_PAN, '378282246310005', 'stolen-key-000000']) {
      for (const text of seen) expect(text).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
  });
});
