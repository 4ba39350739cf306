import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { ApiClient, login, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

const MB10 = 10 * 1024 * 1024;
const PASSWORD = 'correct horse battery staple 17';
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('\u0000\u0000\u0000\rIHDR fake image body')]);
// The start of a Windows executable: "MZ", the DOS stub.
const EXE = Buffer.concat([Buffer.from('MZ'), Buffer.from([0x90, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0xff, 0xff]), Buffer.from('This program cannot be run in DOS mode.\r\r\n$')]);

let app: TestApp;
let team: TestTeam;
let other: TestTeam;
let funnel: Funnel;
let dataDir: string;
let customer: string;
let order: string;
let agent: { id: string; email: string };
let outsider: string;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-tickets-'));
  app = await startTestApp({ CHECKSTAND_DATA_DIR: dataDir });
  team = await app.newTeam('Support');
  other = await app.newTeam('Elsewhere');
  funnel = await seedFunnel(app, team.teamId);
  const lead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('tickets') }, products: [{ offer_id: funnel.offers.serum, quantity: 1 }] });
  customer = lead.body.data.customer.customer_number;
  order = lead.body.data.order_number;
  const users = app.ctx.services.users;
  await users.createUser({ teamId: team.teamId, email: email('owner'), password: PASSWORD });
  const agentEmail = email('agent');
  agent = { id: (await users.createUser({ teamId: team.teamId, email: agentEmail, password: PASSWORD, role: 'support_l1' })).id, email: agentEmail };
  await users.createUser({ teamId: other.teamId, email: email('other-owner'), password: PASSWORD });
  outsider = (await users.createUser({ teamId: other.teamId, email: email('outsider'), password: PASSWORD, role: 'support_l1' })).id;
});
afterAll(async () => {
  await app?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function upload(api: ApiClient, ticket: string, bytes: Buffer, type: string | null, filename?: string, extra: Record<string, string> = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${api.token}`, ...extra };
  if (type !== null) headers['content-type'] = type;
  const q = filename === undefined ? '' : `?filename=${encodeURIComponent(filename)}`;
  const res = await fetch(`${app.url}/v1/tickets/${ticket}/attachments${q}`, { method: 'POST', headers, body: new Uint8Array(bytes) });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), headers: res.headers };
}

async function download(api: ApiClient, id: string) {
  const res = await fetch(`${app.url}/v1/attachments/${id}`, { headers: { authorization: `Bearer ${api.token}` } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** What attachments have written: rows, stored files (embedded) and blobs (PostgreSQL). */
async function stored() {
  const rows = await app.store.run((db) => db.selectFrom('ticket_attachments').select('id').execute());
  const blobs = await app.store.run((db) => db.selectFrom('attachment_blobs').select('key').execute());
  const root = path.join(dataDir, 'attachments');
  const files = fs.existsSync(root) ? fs.readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length : 0;
  return { rows: rows.length, blobs: blobs.length, files };
}

async function newTicket(body: Record<string, unknown> = {}) {
  const r = await team.api.post('/v1/tickets', { customer_number: customer, subject: 'Where is my parcel?', ...body });
  expect(r.status, r.text).toBe(201);
  return r.body.data as { id: string; status: string };
}

describe('tickets', () => {
  it('opens, retrieves, lists with filters and moves through the status table', async () => {
    const t = await team.api.post('/v1/tickets', { order_number: order, subject: '  Parcel late ', assignee: agent.id, message: { body: 'It has been 3 weeks.', author: 'customer' } });
    expect(t.status, t.text).toBe(201);
    expect(t.body.data).toMatchObject({ object: 'ticket', customer_number: customer, order_number: order, subject: 'Parcel late', status: 'open', assignee: agent.id, created_by: expect.stringMatching(/^token:tok_/) });
    const id = t.body.data.id as string;
    expect(id).toMatch(/^tkt_/);
    expect((await team.api.get(`/v1/tickets/${id}`)).body.data).toEqual(t.body.data);
    const plain = await newTicket();

    const list = async (q: string) => (await team.api.get(`/v1/tickets?${q}`)).body.data.map((x: { id: string }) => x.id);
    expect((await list(`customer_number=${customer}`)).slice(0, 2)).toEqual([plain.id, id]);
    expect(await list(`order_number=${order}`)).toEqual([id]);
    expect(await list(`assignee=${agent.id}`)).toContain(id);
    expect(await list(`assignee=${agent.id}`)).not.toContain(plain.id);
    const page = await team.api.get(`/v1/tickets?customer_number=${customer}&limit=1`);
    expect(page.body.has_more).toBe(true);
    expect((await team.api.get(`/v1/tickets?customer_number=${customer}&limit=1&starting_after=${page.body.data[0].id}`)).body.data[0].id).toBe(id);

    const patch = (body: unknown) => team.api.patch(`/v1/tickets/${id}`, body);
    expect((await patch({ status: 'pending', assignee: null })).body.data).toMatchObject({ status: 'pending', assignee: null });
    expect(await list('status=pending')).toContain(id);
    expect(await list('status=open')).not.toContain(id);
    expect((await patch({ status: 'solved' })).body.data.status).toBe('solved');
    expect((await patch({ status: 'open', subject: 'Reopened' })).body.data).toMatchObject({ status: 'open', subject: 'Reopened' });
    expect((await patch({ status: 'closed' })).body.data.status).toBe('closed');
    const reopen = await patch({ status: 'open' });
    expect(reopen.status).toBe(409);
    expect(reopen.body).toMatchObject({ success: false, message: 'A ticket in status closed cannot move to open.', error: { code: 'conflict' } });
  });

  it('refuses bad input with the field named, and what is not the team', async () => {
    const post = (body: unknown) => team.api.post('/v1/tickets', body);
    const expect422 = async (r: Promise<{ status: number; body: any }>, field: string) => {
      const res = await r;
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.error.fields.map((f: { path: string }) => f.path)).toContain(field);
    };
    await expect422(post({ subject: 'x' }), 'customer_number');
    await expect422(post({ customer_number: customer, subject: ' ' }), 'subject');
    await expect422(post({ customer_number: customer, subject: 'x', assignee: outsider }), 'assignee');
    await expect422(post({ customer_number: 'cus_nothere', subject: 'x' }), 'customer_number');
    const otherLead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('someone') } });
    await expect422(post({ customer_number: customer, order_number: otherLead.body.data.order_number, subject: 'x' }), 'order_number');
    await expect422(team.api.get('/v1/tickets?status=lost'), 'query.status');
    const t = await newTicket();
    await expect422(team.api.patch(`/v1/tickets/${t.id}`, {}), '(root)');
    await expect422(team.api.patch(`/v1/tickets/${t.id}`, { assignee: outsider }), 'assignee');
    // Another team's customer, ticket and filters: not found, never shown.
    await expect422(other.api.post('/v1/tickets', { customer_number: customer, subject: 'x' }), 'customer_number');
    expect((await other.api.get(`/v1/tickets/${t.id}`)).status).toBe(404);
    expect((await other.api.patch(`/v1/tickets/${t.id}`, { status: 'solved' })).status).toBe(404);
    expect((await other.api.post(`/v1/tickets/${t.id}/messages`, { body: 'hi' })).status).toBe(404);
    expect((await other.api.get(`/v1/tickets/${t.id}/messages`)).status).toBe(404);
    expect((await other.api.get(`/v1/tickets?customer_number=${customer}`)).body.data).toEqual([]);
  });

  it('messages: by the caller or the customer; the customer reopens a pending ticket; a closed one takes none', async () => {
    const t = await newTicket();
    const session = await login(app.url, { email: agent.email, password: PASSWORD });
    const byAgent = await session.post(`/v1/tickets/${t.id}/messages`, { body: 'We are on it.' });
    expect(byAgent.status, byAgent.text).toBe(201);
    expect(byAgent.body.data).toMatchObject({ object: 'ticket_message', ticket_id: t.id, author: { type: 'user', id: agent.id }, body: 'We are on it.', attachments: [] });
    expect((await team.api.post(`/v1/tickets/${t.id}/messages`, { body: 'Token note' })).body.data.author.type).toBe('token');
    expect((await team.api.patch(`/v1/tickets/${t.id}`, { status: 'pending' })).status).toBe(200);
    const fromCustomer = await team.api.post(`/v1/tickets/${t.id}/messages`, { body: 'Still nothing!', author: 'customer' });
    expect(fromCustomer.body.data.author).toEqual({ type: 'customer', id: customer });
    expect((await team.api.get(`/v1/tickets/${t.id}`)).body.data.status).toBe('open');
    const msgs = await team.api.get(`/v1/tickets/${t.id}/messages`);
    expect(msgs.body.data.map((m: { body: string }) => m.body)).toEqual(['Still nothing!', 'Token note', 'We are on it.']);
    expect((await team.api.post(`/v1/tickets/${t.id}/messages`, { body: 'x', author: 'robot' })).status).toBe(422);
    expect((await team.api.patch(`/v1/tickets/${t.id}`, { status: 'closed' })).status).toBe(200);
    expect((await team.api.post(`/v1/tickets/${t.id}/messages`, { body: 'late' })).status).toBe(409);
    expect((await upload(team.api, t.id, PNG, 'image/png')).status).toBe(409);
  });
});

describe('attachments', () => {
  it('uploads a checked file, attaches it to a message, downloads it with safe headers; another team gets 404', async () => {
    const t = await newTicket();
    const up = await upload(team.api, t.id, PNG, 'image/png', '../../Scan "1".png');
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const att = up.body.data;
    expect(att).toMatchObject({ object: 'attachment', ticket_id: t.id, message_id: null, filename: 'Scan 1.png', content_type: 'image/png', size: PNG.length, url: `/v1/attachments/${att.id}` });
    expect(att.id).toMatch(/^att_/);

    const got = await download(team.api, att.id);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(PNG)).toBe(true);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(got.headers.get('content-disposition')).toBe(`attachment; filename="Scan 1.png"; filename*=UTF-8''Scan%201.png`);
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(got.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");

    const csv = await upload(team.api, t.id, Buffer.from('order,reason\nord_1,late\n'), 'text/csv; charset=utf-8');
    expect(csv.status).toBe(201);
    expect(csv.body.data).toMatchObject({ content_type: 'text/csv', filename: 'attachment.csv' });
    expect((await download(team.api, csv.body.data.id)).headers.get('content-type')).toBe('text/csv; charset=utf-8');

    const msg = await team.api.post(`/v1/tickets/${t.id}/messages`, { body: 'Photo of the box', attachment_ids: [att.id, csv.body.data.id] });
    expect(msg.status, msg.text).toBe(201);
    expect(msg.body.data.attachments.map((a: { id: string; message_id: string }) => [a.id, a.message_id])).toEqual([
      [att.id, msg.body.data.id],
      [csv.body.data.id, msg.body.data.id],
    ]);
    expect((await team.api.get(`/v1/tickets/${t.id}/messages`)).body.data[0].attachments).toHaveLength(2);
    // An attachment belongs to one message: naming it again refuses the whole message.
    const again = await team.api.post(`/v1/tickets/${t.id}/messages`, { body: 'again', attachment_ids: [att.id] });
    expect(again.status).toBe(422);
    expect(again.body.error.fields[0].path).toBe('attachment_ids');
    expect((await team.api.get(`/v1/tickets/${t.id}/messages`)).body.data).toHaveLength(1);
    // Another ticket's upload cannot be named either.
    const t2 = await newTicket();
    const elsewhere = await upload(team.api, t2.id, PNG, 'image/png');
    expect((await team.api.post(`/v1/tickets/${t.id}/messages`, { body: 'x', attachment_ids: [elsewhere.body.data.id] })).status).toBe(422);

    expect((await download(other.api, att.id)).status).toBe(404);
    expect((await upload(other.api, t.id, PNG, 'image/png')).status).toBe(404);
    expect((await download(team.api, 'att_nothere')).status).toBe(404);
    // Where the bytes went: the data directory embedded, the database on PostgreSQL.
    const where = await app.store.run((db) => db.selectFrom('ticket_attachments').select(['storage', 'storage_key']).where('id', '=', att.id).executeTakeFirstOrThrow());
    if (app.store.kind === 'pglite') {
      expect(where.storage).toBe('file');
      expect(fs.readFileSync(path.join(dataDir, 'attachments', team.teamId, where.storage_key)).equals(PNG)).toBe(true);
    } else {
      expect(where.storage).toBe('database');
      expect((await stored()).files).toBe(0);
    }
  });

  it('refuses a disguised or unlisted type (415), an empty file (422), and writes nothing', async () => {
    const t = await newTicket();
    const before = await stored();
    const cases: [Buffer, string | null, number][] = [
      [EXE, 'image/png', 415], // an .exe's bytes sent as a PNG
      [EXE, 'text/plain', 415],
      [EXE, 'application/x-msdownload', 415],
      [Buffer.from('{"a":1}'), 'application/json', 415],
      [Buffer.from('<svg onload="alert(1)"/>'), 'image/svg+xml', 415],
      [PNG, 'image/jpeg', 415],
      [PNG, null, 415],
      [Buffer.alloc(0), 'text/plain', 422],
    ];
    for (const [bytes, type, status] of cases) {
      const r = await upload(team.api, t.id, bytes, type);
      expect(r.status, `${type}: ${JSON.stringify(r.body)}`).toBe(status);
      expect(r.body).toMatchObject({ success: false, data: null, error: { code: status === 415 ? 'unsupported_media_type' : 'validation_failed' } });
    }
    expect(await stored()).toEqual(before);
  });

  it('takes 10 MB and refuses 10 MB + 1 byte with 413 in the envelope, storing nothing', async () => {
    const t = await newTicket();
    const big = Buffer.alloc(MB10, 0x20);
    PNG.copy(big);
    const ok = await upload(team.api, t.id, big, 'image/png', 'large.png');
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(ok.body.data.size).toBe(MB10);
    expect((await download(team.api, ok.body.data.id)).bytes.equals(big)).toBe(true);

    // Idempotency-Key: the fingerprint is the file's digest (not its ten million bytes); a retry replays the first answer.
    const key = { 'idempotency-key': `upload-${t.id}` };
    const first = await upload(team.api, t.id, big, 'image/png', 'large.png', key);
    expect(first.status).toBe(201);
    const replay = await upload(team.api, t.id, big, 'image/png', 'large.png', key);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data.id).toBe(first.body.data.id);
    const otherFile = await upload(team.api, t.id, PNG, 'image/png', 'large.png', key);
    expect(otherFile.status).toBe(422);
    expect(otherFile.body.error.code).toBe('idempotency_key_reused');

    const before = await stored();
    const tooBig = Buffer.concat([big, Buffer.from([0x20])]);
    const r = await upload(team.api, t.id, tooBig, 'image/png', 'larger.png');
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ success: false, data: null, error: { type: 'invalid_request_error', code: 'body_too_large' } });
    expect(await stored()).toEqual(before);
  });

  it('permissions: Level 1 support works tickets and files; a read-only token reads; an affiliate sees nothing', async () => {
    const mint = async (body: Record<string, unknown>) => new ApiClient(app.url, (await team.api.post('/v1/api-tokens', { name: 'x', ...body })).body.data.secret);
    const l1 = await mint({ role: 'support_l1' });
    const t = await l1.post('/v1/tickets', { customer_number: customer, subject: 'From L1', assignee: agent.id });
    expect(t.status).toBe(201);
    const up = await upload(l1, t.body.data.id, Buffer.from('%PDF-1.7\n%\u00e2\u00e3\n'), 'application/pdf', 'label.pdf');
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    expect((await l1.patch(`/v1/tickets/${t.body.data.id}`, { status: 'solved' })).status).toBe(200);

    const reader = await mint({ permissions: ['orders:view'] });
    expect((await reader.get(`/v1/tickets/${t.body.data.id}`)).status).toBe(200);
    expect((await download(reader, up.body.data.id)).status).toBe(200);
    const denied = await upload(reader, t.body.data.id, PNG, 'image/png');
    expect(denied.status).toBe(403);
    expect(denied.body.data).toEqual({ permission: 'orders:annotate' });
    expect((await reader.post('/v1/tickets', { customer_number: customer, subject: 'x' })).status).toBe(403);

    const affiliate = await mint({ role: 'affiliate', affiliate_ids: ['aff1'] });
    expect((await affiliate.get('/v1/tickets')).status).toBe(403);
    expect((await download(affiliate, up.body.data.id)).status).toBe(403);
    expect((await upload(app.anonymous, t.body.data.id, PNG, 'image/png')).status).toBe(401);
  });
});
