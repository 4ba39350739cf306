import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatMajorAmount } from '../src/app/currency.ts';
import { MailService } from '../src/modules/mail/service.ts';
import type { EmittedEvent } from '../src/modules/events/service.ts';
import { smtpTransport } from '../src/modules/mail/transport.ts';
import { startWorker } from '../src/worker/worker.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

// ---- a real SMTP server on loopback, keeping what arrives in memory

interface Received {
  from: string;
  to: string[];
  raw: string;
}

interface TestSmtp {
  url: string;
  port: number;
  received: Received[];
  close(): Promise<void>;
}

async function startSmtp(): Promise<TestSmtp> {
  const received: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, port, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

// ---- a minimal MIME reader: headers, and the decoded text/plain and text/html parts

interface ParsedMail {
  headers: Map<string, string>;
  text: string;
  html: string;
}

function splitHead(raw: string): { headers: Map<string, string>; body: string } {
  const at = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, at).replace(/\r\n[ \t]+/g, ' ');
  const headers = new Map<string, string>();
  for (const line of head.split('\r\n')) {
    const i = line.indexOf(':');
    headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return { headers, body: raw.slice(at + 4) };
}

function decodeBody(body: string, encoding: string | undefined): string {
  if (encoding?.toLowerCase() === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (encoding?.toLowerCase() === 'quoted-printable') {
    const soft = body.replace(/=\r?\n/g, '');
    const bytes: number[] = [];
    for (let i = 0; i < soft.length; i++) {
      if (soft[i] === '=' && /^[0-9A-F]{2}$/i.test(soft.slice(i + 1, i + 3))) {
        bytes.push(parseInt(soft.slice(i + 1, i + 3), 16));
        i += 2;
      } else bytes.push(...Buffer.from(soft[i]!, 'utf8'));
    }
    return Buffer.from(bytes).toString('utf8');
  }
  return body;
}

function parseMail(raw: string): ParsedMail {
  const { headers, body } = splitHead(raw);
  const type = headers.get('content-type') ?? 'text/plain';
  const out: ParsedMail = { headers, text: '', html: '' };
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  const parts = boundary ? body.split(`--${boundary}`).slice(1, -1).map((p) => splitHead(p.replace(/^\r\n/, ''))) : [{ headers, body }];
  for (const p of parts) {
    const t = p.headers.get('content-type') ?? 'text/plain';
    const decoded = decodeBody(p.body.replace(/\r\n$/, ''), p.headers.get('content-transfer-encoding'));
    if (t.startsWith('text/plain')) out.text = decoded.replace(/\r\n/g, '\n');
    if (t.startsWith('text/html')) out.html = decoded.replace(/\r\n/g, '\n');
  }
  return out;
}

// ---- fixtures

let smtp: TestSmtp;
let app: TestApp;
let team: TestTeam;
let other: TestTeam;
let funnel: Funnel;

beforeAll(async () => {
  smtp = await startSmtp();
  app = await startTestApp({ SMTP_URL: smtp.url, MAIL_FROM: 'Glow Shop <orders@glow.example>' });
  team = await app.newTeam('Mail A');
  other = await app.newTeam('Mail B');
  funnel = await seedFunnel(app, team.teamId);
});
afterAll(async () => {
  app?.ctx.services.mail.close();
  await app?.close();
  await smtp?.close();
});

/** A real order (a lead with one serum: $39.00 + $4.95 shipping) as the API shows it. */
async function createOrder(t: TestTeam, campaignId: string, offerId: string, customer: Record<string, string> = {}) {
  const r = await t.api.post('/checkout/leads', {
    campaign_id: campaignId,
    customer: { email: email('mail'), first_name: 'Ada', last_name: 'Lovelace', ...customer },
    products: [{ offer_id: offerId, quantity: 1 }],
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data as { order_number: string; customer: { email: string }; total: number };
}

async function emitCompleted(a: TestApp, teamId: string, order: { order_number: string }): Promise<EmittedEvent> {
  return a.store.transaction((trx) => a.ctx.services.events.emit(trx, teamId, 'order.completed', { orderId: order.order_number, object: order }));
}

async function mailRows(a: TestApp, orderNumber: string) {
  return a.store.run((db) => db.selectFrom('mail_messages').selectAll().where('order_id', '=', orderNumber).execute());
}

function arrivedFor(to: string): ParsedMail[] {
  return smtp.received.filter((m) => m.to.includes(to)).map((m) => parseMail(m.raw));
}

describe('autoresponder: purchase confirmation over SMTP', () => {
  it('sends the default confirmation to the customer when an order completes', async () => {
    const order = await createOrder(team, funnel.campaignId, funnel.offers.serum);
    await emitCompleted(app, team.teamId, order);
    const [row] = await mailRows(app, order.order_number);
    expect(row).toMatchObject({ status: 'pending', kind: 'purchase_confirmation', to_address: order.customer.email, attempt_count: 0 });

    expect(await app.ctx.services.mail.drainer.drain(app.ctx, pino({ enabled: false }))).toBeGreaterThanOrEqual(1);

    const [got, ...more] = arrivedFor(order.customer.email);
    expect(more).toHaveLength(0);
    expect(got!.headers.get('to')).toBe(order.customer.email);
    expect(got!.headers.get('from')).toBe('Glow Shop <orders@glow.example>');
    expect(got!.headers.get('subject')).toBe(`Your order ${order.order_number} is confirmed`);
    expect(got!.headers.get('message-id')).toBe(`<${row!.id}@glow.example>`);
    expect(got!.text).toContain(order.order_number);
    expect(got!.text).toContain('Total: $43.95');
    expect(got!.text).toContain('Hi Ada Lovelace,');
    expect(got!.text).toContain('- Serum x1 × 1: $39.00');
    expect(got!.text).toContain('Main funnel');
    expect(got!.html).toContain('<li>Serum x1 × 1: $39.00</li>');

    const [sent] = await mailRows(app, order.order_number);
    expect(sent).toMatchObject({ status: 'sent', transport: 'smtp', transport_ref: `<${row!.id}@glow.example>`, attempt_count: 1, last_error: null });
    expect(sent!.sent_at).toBeInstanceOf(Date);

    const listed = await team.api.get(`/v1/mail?order_number=${order.order_number}`);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([
      expect.objectContaining({
        object: 'mail',
        id: row!.id,
        order_number: order.order_number,
        kind: 'purchase_confirmation',
        to: order.customer.email,
        subject: `Your order ${order.order_number} is confirmed`,
        status: 'sent',
        attempts: 1,
        transport: 'smtp',
      }),
    ]);
    const one = await team.api.get(`/v1/mail/${row!.id}`);
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ id: row!.id, status: 'sent', eml_path: null, transport_ref: `<${row!.id}@glow.example>` });
    expect(one.body.data.text_body).toContain('Total: $43.95');
  });

  it("uses the campaign's template when one is set, escaping values in the HTML part", async () => {
    const put = await team.api.request('PUT', `/v1/campaigns/${funnel.campaignId}/purchase-email`, {
      subject: 'Thanks {{customer.first_name}}! Order {{order_number}} ({{total}})',
      body: 'Dear {{customer.first_name}} <3,\n\nYou paid {{total}} for:\n\n{{lines}}\n\n{{no_such_thing}}Ship to {{customer.email}}.',
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.data).toMatchObject({ is_default: false, unknown_variables: ['no_such_thing'] });

    const order = await createOrder(team, funnel.campaignId, funnel.offers.serum, { first_name: '<b>Grace</b>' });
    await emitCompleted(app, team.teamId, order);
    await app.ctx.services.mail.sendDueMail();

    const [got, ...more] = arrivedFor(order.customer.email);
    expect(more).toHaveLength(0);
    expect(got!.headers.get('subject')).toBe(`Thanks <b>Grace</b>! Order ${order.order_number} ($43.95)`);
    expect(got!.text).toBe(`Dear <b>Grace</b> <3,\n\nYou paid $43.95 for:\n\n- Serum x1 × 1: $39.00\n\nShip to ${order.customer.email}.`);
    expect(got!.html).toContain('<p>Dear &lt;b&gt;Grace&lt;/b&gt; &lt;3,</p>');
    expect(got!.html).not.toContain('<b>Grace');
  });

  it('renders the default again after DELETE, and previews drafts with a sample order', async () => {
    const shown = await team.api.get(`/v1/campaigns/${funnel.campaignId}/purchase-email`);
    expect(shown.body.data).toMatchObject({ is_default: false, campaign_id: funnel.campaignId });
    expect(shown.body.data.variables.map((v: { name: string }) => v.name)).toEqual(expect.arrayContaining(['order_number', 'customer.first_name', 'total', 'lines']));

    const preview = await team.api.post(`/v1/campaigns/${funnel.campaignId}/purchase-email/preview`, { subject: '{{total}} for {{customer.name}}' });
    expect(preview.status).toBe(200);
    expect(preview.body.data.subject).toBe('$52.95 for Ada Lovelace');
    expect(preview.body.data.text).toContain('You paid $52.95');

    const reset = await team.api.delete(`/v1/campaigns/${funnel.campaignId}/purchase-email`);
    expect(reset.status).toBe(200);
    expect(reset.body.data).toMatchObject({ is_default: true, subject: 'Your order {{order_number}} is confirmed', unknown_variables: [] });

    const order = await createOrder(team, funnel.campaignId, funnel.offers.serum);
    await emitCompleted(app, team.teamId, order);
    await app.ctx.services.mail.sendDueMail();
    expect(arrivedFor(order.customer.email)[0]!.headers.get('subject')).toBe(`Your order ${order.order_number} is confirmed`);
  });

  it('refuses an empty subject or unknown fields (422)', async () => {
    const r = await team.api.request('PUT', `/v1/campaigns/${funnel.campaignId}/purchase-email`, { subject: ' ', body: 'x' });
    expect(r.status).toBe(422);
    const extra = await team.api.request('PUT', `/v1/campaigns/${funnel.campaignId}/purchase-email`, { subject: 's', body: 'b', html: '<p>' });
    expect(extra.status).toBe(422);
    expect(extra.body.error.fields).toEqual([{ path: 'html', message: 'is not a field you can set here' }]);
  });

  it('the same event delivered twice to the sink makes one mail, sent once', async () => {
    const order = await createOrder(team, funnel.campaignId, funnel.offers.serum);
    const event = await emitCompleted(app, team.teamId, order);
    await app.store.transaction((trx) => app.ctx.services.mail.onEvent(trx, event));
    expect(await mailRows(app, order.order_number)).toHaveLength(1);
    await app.ctx.services.mail.sendDueMail();
    await app.ctx.services.mail.sendDueMail();
    expect(arrivedFor(order.customer.email)).toHaveLength(1);
  });

  it('Complete Order queues the confirmation in its transaction; the worker sends it', async () => {
    // A listed test card is approved without a gateway.
    expect((await team.api.post('/v1/test-cards', { card_number: CARD.card_number })).status).toBe(201);
    const paid = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('complete'), first_name: 'Katherine' },
      products: [{ offer_id: funnel.offers.serum, quantity: 2 }],
      payment: CARD,
    });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    const order = paid.body.data as { order_number: string; customer: { email: string } };
    const completed = await team.api.post('/checkout/orders/complete', { order_number: order.order_number });
    expect(completed.status, JSON.stringify(completed.body)).toBe(200);
    await team.api.post('/checkout/orders/complete', { order_number: order.order_number });
    expect(await mailRows(app, order.order_number)).toHaveLength(1);

    const worker = startWorker(app.ctx, pino({ enabled: false }), { schedules: [], pollMs: 20 });
    try {
      await expect.poll(() => arrivedFor(order.customer.email).length, { timeout: 5000 }).toBe(1);
    } finally {
      await worker.stop();
    }
    const got = arrivedFor(order.customer.email)[0]!;
    expect(got.text).toContain('Hi Katherine,');
    expect(got.text).toContain('- Serum x1 × 2: $78.00');
    expect(got.text).toContain('Total: $82.95');
  });

  it("shows an order's amounts in its currency's ISO 4217 decimals, as the gateway is sent them (HUF: 2, where Intl shows 0)", async () => {
    const created = async (path: string, body: Record<string, unknown>) => {
      const r = await team.api.post(path, body);
      expect(r.status, `${path}: ${r.text}`).toBe(201);
      return r.body.data.id as string;
    };
    const campaign = await created('/v1/campaigns', { name: 'Forint', currency: 'HUF' });
    const product = await created('/v1/products', { name: 'Serum HU' });
    const offer = await created('/v1/offers', { campaign_id: campaign, product_id: product, name: 'Serum HU', price: 390_000, shipping: 99_050, billing: 'one_time', fulfillment_type: 'physical' });
    // Listed once per team: 409 when an earlier test listed it already.
    expect([201, 409]).toContain((await team.api.post('/v1/test-cards', { card_number: CARD.card_number })).status);
    const paid = await team.api.post('/checkout/orders', {
      campaign_id: campaign,
      currency: 'HUF',
      customer: { email: email('huf'), first_name: 'Zsofia' },
      products: [{ offer_id: offer, quantity: 1 }],
      payment: CARD,
    });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    const order = paid.body.data as { order_number: string; total: number };
    expect(order.total).toBe(489_050);
    expect((await team.api.post('/checkout/orders/complete', { order_number: order.order_number })).status).toBe(200);
    expect(await app.ctx.services.mail.sendDueMail()).toBe(1);
    const customer = (paid.body.data as { customer: { email: string } }).customer.email;
    const text = arrivedFor(customer)[0]!.text.replace(/\u00a0/g, ' ');
    // 4890.50 forint, as formatMajorAmount sends it to a gateway; not "HUF 489,050" (Intl's 0 decimals).
    expect(formatMajorAmount(order.total, 'HUF')).toBe('4890.50');
    expect(text).toContain('Total: HUF 4,890.50');
    expect(text).toContain('- Serum HU × 1: HUF 3,900.00');
  });

  it('ignores events other than order.completed', async () => {
    const order = await createOrder(team, funnel.campaignId, funnel.offers.serum);
    await app.store.transaction((trx) => app.ctx.services.events.emit(trx, team.teamId, 'order.upsell_added', { orderId: order.order_number, object: order }));
    expect(await mailRows(app, order.order_number)).toHaveLength(0);
  });

  it('two workers draining at once send each mail exactly once', async () => {
    const orders = await Promise.all([1, 2, 3, 4, 5].map(() => createOrder(team, funnel.campaignId, funnel.offers.serum)));
    for (const o of orders) await emitCompleted(app, team.teamId, o);
    const second = new MailService(app.store, app.ctx.services.catalog, smtpTransport(smtp.url), { from: 'x@glow.example', batchSize: 2 });
    try {
      const counts = await Promise.all([app.ctx.services.mail.sendDueMail(), second.sendDueMail(), app.ctx.services.mail.sendDueMail(), second.sendDueMail()]);
      expect(counts.reduce((s, n) => s + n, 0)).toBe(5);
    } finally {
      second.close();
    }
    for (const o of orders) {
      expect(arrivedFor(o.customer.email), o.order_number).toHaveLength(1);
      expect((await mailRows(app, o.order_number))[0]).toMatchObject({ status: 'sent', attempt_count: 1 });
    }
  });

  it("another team's mail and campaign templates are 404; lists never cross teams", async () => {
    const order = await createOrder(team, funnel.campaignId, funnel.offers.serum);
    await emitCompleted(app, team.teamId, order);
    const [row] = await mailRows(app, order.order_number);
    const paths = [`/v1/mail/${row!.id}`, `/v1/campaigns/${funnel.campaignId}/purchase-email`];
    for (const p of paths) {
      expect((await other.api.get(p)).status, p).toBe(404);
      expect((await team.api.get(p)).status, p).toBe(200);
    }
    const put = await other.api.request('PUT', `/v1/campaigns/${funnel.campaignId}/purchase-email`, { subject: 'pwned', body: 'pwned' });
    expect(put.status).toBe(404);
    expect(put.body).toMatchObject({ success: false, data: null, error: { code: 'not_found' } });
    expect((await other.api.request('PUT', `/v1/campaigns/${funnel.campaignId}/purchase-email`)).status).toBe(404);
    expect((await other.api.delete(`/v1/campaigns/${funnel.campaignId}/purchase-email`)).status).toBe(404);
    expect((await other.api.post(`/v1/campaigns/${funnel.campaignId}/purchase-email/preview`, {})).status).toBe(404);
    expect((await team.api.get(`/v1/campaigns/${funnel.campaignId}/purchase-email`)).body.data.is_default).toBe(true);

    expect((await other.api.get('/v1/mail')).body.data).toEqual([]);
    expect((await other.api.get(`/v1/mail?order_number=${order.order_number}`)).body.data).toEqual([]);
    expect((await other.api.get(`/v1/mail?starting_after=${row!.id}`)).status).toBe(422);
  });

  it('lists newest first with cursor pagination and a status filter', async () => {
    const all = (await team.api.get('/v1/mail?limit=100')).body.data as Array<{ id: string; status: string }>;
    expect(all.length).toBeGreaterThanOrEqual(5);
    const first = await team.api.get('/v1/mail?limit=2');
    expect(first.body.has_more).toBe(true);
    expect(first.body.data.map((m: { id: string }) => m.id)).toEqual(all.slice(0, 2).map((m) => m.id));
    const next = await team.api.get(`/v1/mail?limit=2&starting_after=${all[1]!.id}`);
    expect(next.body.data.map((m: { id: string }) => m.id)).toEqual(all.slice(2, 4).map((m) => m.id));
    const pending = (await team.api.get('/v1/mail?status=pending&limit=100')).body.data as Array<{ status: string }>;
    expect(pending.every((m) => m.status === 'pending')).toBe(true);
    expect(pending.length).toBe(all.filter((m) => m.status === 'pending').length);
    expect((await team.api.get('/v1/mail?status=bounced')).status).toBe(422);
    expect((await team.api.get('/v1/mail?color=red')).status).toBe(422);
  });

  it('a stopped SMTP server: retried with backoff, then failed with the last error', async () => {
    // Everything due so far goes out first, so the failing worker below only sees its own mail.
    while ((await app.ctx.services.mail.sendDueMail()) > 0);
    const dead = await startSmtp();
    await dead.close();
    const failing = new MailService(app.store, app.ctx.services.catalog, smtpTransport(dead.url), { from: 'x@glow.example', retryDelaysMs: [0, 60_000] });
    try {
      const order = await createOrder(team, funnel.campaignId, funnel.offers.serum);
      await emitCompleted(app, team.teamId, order);

      expect(await failing.sendDueMail()).toBe(1);
      let [row] = await mailRows(app, order.order_number);
      expect(row).toMatchObject({ status: 'pending', attempt_count: 1, transport: 'smtp', sent_at: null });
      expect(row!.last_error).toMatch(/ECONNREFUSED/);

      // The first retry is due at once (delay 0); after it the next is a minute away.
      expect(await failing.sendDueMail()).toBe(1);
      [row] = await mailRows(app, order.order_number);
      expect(row).toMatchObject({ status: 'pending', attempt_count: 2 });
      expect(row!.next_attempt_at!.getTime()).toBeGreaterThan(Date.now() + 50_000);
      expect(await failing.sendDueMail()).toBe(0);

      // Make it due again: the schedule has run out, so this attempt is the last.
      await app.store.run((db) => db.updateTable('mail_messages').set({ next_attempt_at: new Date() }).where('id', '=', row!.id).execute());
      expect(await failing.sendDueMail()).toBe(1);
      [row] = await mailRows(app, order.order_number);
      expect(row).toMatchObject({ status: 'failed', attempt_count: 3, next_attempt_at: null, sent_at: null });
      expect(row!.last_error).toMatch(/ECONNREFUSED/);
      expect(await failing.sendDueMail()).toBe(0);

      const shown = await team.api.get(`/v1/mail/${row!.id}`);
      expect(shown.body.data).toMatchObject({ status: 'failed', attempts: 3, next_attempt_at: null });
      expect(shown.body.data.last_error).toMatch(/ECONNREFUSED/);
      expect((await team.api.get(`/v1/mail?status=failed`)).body.data.map((m: { id: string }) => m.id)).toContain(row!.id);
      expect(arrivedFor(order.customer.email)).toHaveLength(0);
    } finally {
      failing.close();
    }
  });
});

describe('autoresponder: without SMTP_URL each mail is an .eml file', () => {
  let fileApp: TestApp;
  let dir: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-mail-'));
    fileApp = await startTestApp({ CHECKSTAND_DATA_DIR: dir });
  });
  afterAll(async () => {
    await fileApp?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes <data dir>/mail/<id>.eml and lists it', async () => {
    const t = await fileApp.newTeam('Files');
    const f = await seedFunnel(fileApp, t.teamId, 'EUR');
    const order = await createOrder(t, f.campaignId, f.offers.serum);
    await emitCompleted(fileApp, t.teamId, order);
    expect(await fileApp.ctx.services.mail.sendDueMail()).toBe(1);

    const listed = await t.api.get('/v1/mail');
    expect(listed.body.data).toHaveLength(1);
    const item = listed.body.data[0];
    expect(item).toMatchObject({ order_number: order.order_number, to: order.customer.email, status: 'sent', transport: 'file', attempts: 1 });

    const one = await t.api.get(`/v1/mail/${item.id}`);
    const emlPath = path.join(dir, 'mail', `${item.id}.eml`);
    expect(one.body.data.eml_path).toBe(emlPath);
    const parsed = parseMail(fs.readFileSync(emlPath, 'utf8'));
    expect(parsed.headers.get('to')).toBe(order.customer.email);
    expect(parsed.headers.get('from')).toBe('Checkstand <no-reply@checkstand.local>');
    expect(parsed.headers.get('subject')).toBe(`Your order ${order.order_number} is confirmed`);
    expect(parsed.text).toContain('Total: €43.95');
    expect(parsed.text).toBe(one.body.data.text_body);
    expect(fs.readdirSync(path.join(dir, 'mail'))).toEqual([`${item.id}.eml`]);
  });
});
