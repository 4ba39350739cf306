import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/app/clock.ts';
import { LeadFollowUpService } from '../src/modules/leads/service.ts';
import { SCHEDULES, startWorker } from '../src/worker/worker.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { type RecordingReceiver, startRecordingReceiver } from './support/receiver.ts';

const log = pino({ enabled: false });
const MINUTE = 60_000;

// ---- a real SMTP server on loopback (as in test/mail.test.ts), keeping what arrives

interface Received {
  to: string[];
  raw: string;
}

async function startSmtp(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString('utf8') });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The raw message with quoted-printable soft breaks and escapes undone (enough to find a URL in it). */
function unfolded(raw: string): string {
  const soft = raw.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < soft.length; i++) {
    if (soft[i] === '=' && /^[0-9A-F]{2}$/.test(soft.slice(i + 1, i + 3))) {
      bytes.push(parseInt(soft.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(soft[i]!, 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

// ---- fixtures

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let receiver: RecordingReceiver;
let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
const clock = new ManualClock();

const CHECKOUT = 'https://shop.example/checkout?order={order_number}&email={email}&c={campaign_id}';

beforeAll(async () => {
  smtp = await startSmtp();
  receiver = await startRecordingReceiver();
  app = await startTestApp({ SMTP_URL: smtp.url, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCHEDULE_MS: '20,20,20' }, { clock });
  team = await app.newTeam('Abandoned leads');
  funnel = await seedFunnel(app, team.teamId);
  // A listed test card is approved without a gateway: how these tests pay a lead.
  expect((await team.api.post('/v1/test-cards', { card_number: CARD.card_number })).status).toBe(201);
  const hook = await team.api.post('/v1/webhook-endpoints', { url: `${receiver.url}/hooks`, event_types: ['lead.abandoned'] });
  expect(hook.status, hook.text).toBe(201);
  const on = await team.api.patch(`/v1/campaigns/${funnel.campaignId}`, {
    abandonment: { enabled: true, delay_minutes: 30, checkout_url: CHECKOUT, mail: { enabled: true } },
  });
  expect(on.status, on.text).toBe(200);
});
afterAll(async () => {
  await app?.close();
  await receiver?.close();
  await smtp?.close();
});
// Each test starts at the real time: leads it creates are not due until it moves the clock.
beforeEach(() => clock.set(new Date()));

const leads = () => app.ctx.services.leads;

async function createLead(campaignId = funnel.campaignId, offerId = funnel.offers.serum) {
  const r = await team.api.post('/checkout/leads', {
    campaign_id: campaignId,
    customer: { email: email('cart'), first_name: 'Ada', last_name: 'Lovelace' },
    products: [{ offer_id: offerId, quantity: 1 }],
  });
  expect(r.status, r.text).toBe(201);
  return r.body.data as { order_number: string; customer: { email: string; customer_number: string } };
}

/** Moves a row's times `ms` into the past, as if it had been written then. */
async function backdate(table: 'orders', id: string, ms: number) {
  const at = new Date(Date.now() - ms);
  await app.store.run((db) => db.updateTable(table).set({ created_at: at, updated_at: at }).where('id', '=', id).execute());
}

async function pay(orderNumber: string) {
  const r = await team.api.post('/checkout/orders/payment', { order_number: orderNumber, payment: CARD });
  expect(r.status, r.text).toBe(200);
  expect(r.body.data.status).toBe('processing');
}

/** Webhook deliveries and mail go out (what the worker's drainers do), until nothing is due. */
async function deliverAll() {
  while ((await app.ctx.services.webhooks.drainer.drain(app.ctx, log)) + (await app.ctx.services.mail.drainer.drain(app.ctx, log)) > 0);
}

async function abandonedEvents(orderNumber: string) {
  const r = await team.api.get(`/v1/events?type=lead.abandoned&order_number=${orderNumber}`);
  expect(r.status, r.text).toBe(200);
  return r.body.data as Array<{ id: string; data: { object: Record<string, any> } }>;
}

function hooksFor(orderNumber: string) {
  return receiver.deliveries.map((d) => JSON.parse(d.raw.toString('utf8'))).filter((b) => b.type === 'lead.abandoned' && b.data.object.order_number === orderNumber);
}

const mailsTo = (to: string) => smtp.received.filter((m) => m.to.includes(to));

async function mailRows(orderNumber: string) {
  const r = await team.api.get(`/v1/mail?order_number=${orderNumber}`);
  expect(r.status, r.text).toBe(200);
  return r.body.data as Array<{ id: string; kind: string; status: string; last_error: string | null }>;
}

describe('abandoned-lead follow-up', () => {
  it('a lead unpaid past the delay: one lead.abandoned webhook and one mail with the checkout link, never again', async () => {
    const lead = await createLead();
    clock.advanceMs(29 * MINUTE);
    await leads().runDue(log);
    expect(await abandonedEvents(lead.order_number)).toHaveLength(0);

    clock.advanceMs(2 * MINUTE);
    const tally = await leads().runDue(log);
    expect(tally.abandoned).toBeGreaterThanOrEqual(1);
    await deliverAll();

    const link = `https://shop.example/checkout?order=${lead.order_number}&email=${encodeURIComponent(lead.customer.email)}&c=${funnel.campaignId}`;
    const [event, ...moreEvents] = await abandonedEvents(lead.order_number);
    expect(moreEvents).toHaveLength(0);
    expect(event!.data.object).toMatchObject({ object: 'order', order_number: lead.order_number, status: 'lead', total: 4395, checkout_url: link });

    const [hook, ...moreHooks] = hooksFor(lead.order_number);
    expect(moreHooks).toHaveLength(0);
    expect(hook).toMatchObject({ id: event!.id, type: 'lead.abandoned', data: { object: { order_number: lead.order_number, checkout_url: link } } });

    const [mail, ...moreMail] = mailsTo(lead.customer.email);
    expect(moreMail).toHaveLength(0);
    const raw = unfolded(mail!.raw);
    expect(raw).toContain('Subject: Your order from Main funnel is waiting for you');
    expect(raw).toContain(`Complete your order here: ${link}`);
    expect(raw).toContain(`<a href="${link.replace(/&/g, '&amp;')}">`);
    expect(raw).toContain('Serum x1 × 1: $39.00');
    expect((await mailRows(lead.order_number)).map((m) => [m.kind, m.status])).toEqual([['lead_abandonment', 'sent']]);

    // Later runs, a later change of the lead, more time: still one of each.
    clock.advanceMs(120 * MINUTE);
    await leads().runDue(log);
    expect((await team.api.post('/checkout/leads', { order_number: lead.order_number, phone: '+1 555 0100' })).status).toBe(200);
    clock.advanceMs(120 * MINUTE);
    await leads().runDue(log);
    await deliverAll();
    expect(await abandonedEvents(lead.order_number)).toHaveLength(1);
    expect(hooksFor(lead.order_number)).toHaveLength(1);
    expect(mailsTo(lead.customer.email)).toHaveLength(1);

    // Abandoned, then paid: the payment goes through as any other.
    await pay(lead.order_number);
    expect((await team.api.post('/checkout/orders/complete', { order_number: lead.order_number })).status).toBe(200);
  });

  it('counts the delay from the lead’s last change', async () => {
    const lead = await createLead();
    // The lead was made 40 minutes ago, the follow-up switched on before (the rows say so: the database keeps real time, the test clock cannot move it)…
    await backdate('orders', lead.order_number, 40 * MINUTE);
    await app.store.run((db) => db.updateTable('campaigns').set({ abandonment_enabled_at: new Date(Date.now() - 120 * MINUTE) }).where('id', '=', funnel.campaignId).execute());
    expect((await leads().findDue(1000)).map((l) => l.order_id)).toContain(lead.order_number);
    // …and the customer comes back now and changes it (Create Lead again): its delay starts over.
    const again = await team.api.post('/checkout/leads', { order_number: lead.order_number, phone: '+1 555 0199' });
    expect(again.status).toBe(200);
    clock.advanceMs(20 * MINUTE);
    await leads().runDue(log);
    expect(await abandonedEvents(lead.order_number)).toHaveLength(0);
    clock.advanceMs(11 * MINUTE);
    await leads().runDue(log);
    expect(await abandonedEvents(lead.order_number)).toHaveLength(1);
  });

  it('leaves alone leads idle since before the follow-up was switched on', async () => {
    const c = await team.api.post('/v1/campaigns', { name: 'Switched on later', currency: 'USD' });
    const campaignId = c.body.data.id as string;
    const r = await team.api.post('/checkout/leads', { campaign_id: campaignId, customer: { email: email('old') } });
    expect(r.status).toBe(201);
    const orderNumber = r.body.data.order_number as string;
    await backdate('orders', orderNumber, 300 * MINUTE);
    const on = await team.api.patch(`/v1/campaigns/${campaignId}`, { abandonment: { enabled: true, delay_minutes: 30 } });
    expect(on.body.data.abandonment.enabled).toBe(true);
    clock.advanceMs(31 * MINUTE);
    await leads().runDue(log);
    expect(await abandonedEvents(orderNumber)).toHaveLength(0);
    expect(await leads().followUp(team.teamId, orderNumber)).toEqual({ kind: 'skipped', why: 'idle since before the follow-up was switched on' });
    // Changed after: followed up a delay later.
    expect((await team.api.post('/checkout/leads', { order_number: orderNumber, phone: '+1 555 0142' })).status).toBe(200);
    clock.advanceMs(31 * MINUTE);
    await leads().runDue(log);
    expect(await abandonedEvents(orderNumber)).toHaveLength(1);
  });

  it('two workers at once, in small batches: each lead followed up once', async () => {
    const created = await Promise.all(Array.from({ length: 7 }, () => createLead()));
    clock.advanceMs(31 * MINUTE);
    const d = { orders: app.ctx.services.orders, catalog: app.ctx.services.catalog, events: app.ctx.services.events, mail: app.ctx.services.mail, clock };
    const a = new LeadFollowUpService(app.store, d, { batchSize: 2 });
    const b = new LeadFollowUpService(app.store, d, { batchSize: 3 });
    const tallies = await Promise.all([a.runDue(log), b.runDue(log), a.runDue(log), b.runDue(log)]);
    expect(tallies.reduce((s, t) => s + t.failed, 0)).toBe(0);
    expect(tallies.reduce((s, t) => s + t.abandoned, 0)).toBe(7);
    await deliverAll();
    for (const lead of created) {
      expect(await abandonedEvents(lead.order_number), lead.order_number).toHaveLength(1);
      expect(hooksFor(lead.order_number), lead.order_number).toHaveLength(1);
      expect(mailsTo(lead.customer.email), lead.order_number).toHaveLength(1);
    }
  });

  it("the worker's schedule drives it; two workers running at once still follow up each lead once", async () => {
    const created = await Promise.all(Array.from({ length: 4 }, () => createLead()));
    clock.advanceMs(31 * MINUTE);
    const schedule = SCHEDULES.filter((s) => s.name === 'follow-up-abandoned-leads');
    expect(schedule).toHaveLength(1);
    const workers = [startWorker(app.ctx, log, { schedules: schedule, pollMs: 20 }), startWorker(app.ctx, log, { schedules: schedule, pollMs: 20 })];
    try {
      // Each worker runs the schedule at once on start; their drainers deliver the webhooks and mail.
      for (const lead of created) {
        await expect.poll(() => mailsTo(lead.customer.email).length, { timeout: 10_000 }).toBe(1);
        await expect.poll(() => hooksFor(lead.order_number).length, { timeout: 10_000 }).toBe(1);
      }
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    for (const lead of created) {
      expect(await abandonedEvents(lead.order_number)).toHaveLength(1);
      expect(mailsTo(lead.customer.email)).toHaveLength(1);
      expect(hooksFor(lead.order_number)).toHaveLength(1);
    }
  });

  it('a lead paid before the delay: nothing', async () => {
    const lead = await createLead();
    await pay(lead.order_number);
    clock.advanceMs(31 * MINUTE);
    await leads().runDue(log);
    await deliverAll();
    expect(await abandonedEvents(lead.order_number)).toHaveLength(0);
    expect(hooksFor(lead.order_number)).toHaveLength(0);
    expect(await mailRows(lead.order_number)).toHaveLength(0);
  });

  it('a lead paid between the scan and the claim: nothing (the claim decides under the order lock)', async () => {
    const lead = await createLead();
    clock.advanceMs(31 * MINUTE);
    const due = await leads().findDue(1000);
    expect(due.map((l) => l.order_id)).toContain(lead.order_number);
    await pay(lead.order_number);
    const r = await leads().followUp(team.teamId, lead.order_number);
    expect(r).toEqual({ kind: 'skipped', why: 'the order is processing, no longer an unpaid lead' });
    await leads().runDue(log);
    await deliverAll();
    expect(await abandonedEvents(lead.order_number)).toHaveLength(0);
    expect(hooksFor(lead.order_number)).toHaveLength(0);
    expect(await mailRows(lead.order_number)).toHaveLength(0);
    expect(mailsTo(lead.customer.email)).toHaveLength(0);
  });

  it('a lead paid after the claim but before its mail went out: the mail is cancelled, never sent', async () => {
    const lead = await createLead();
    clock.advanceMs(31 * MINUTE);
    const r = await leads().followUp(team.teamId, lead.order_number);
    expect(r).toMatchObject({ kind: 'abandoned', mail: true });
    expect((await mailRows(lead.order_number)).map((m) => m.status)).toEqual(['pending']);
    await pay(lead.order_number);
    await deliverAll();
    expect(mailsTo(lead.customer.email)).toHaveLength(0);
    const [row] = await mailRows(lead.order_number);
    expect(row).toMatchObject({ kind: 'lead_abandonment', status: 'cancelled', last_error: 'the order became processing before the mail was sent' });
    expect((await team.api.get(`/v1/mail?status=cancelled`)).body.data.map((m: { id: string }) => m.id)).toContain(row!.id);
    // The event said what was true when it was claimed: the lead had been abandoned.
    expect(hooksFor(lead.order_number)).toHaveLength(1);
  });

  it('payments racing the claims: a paid lead is never mailed', async () => {
    const created = await Promise.all(Array.from({ length: 6 }, () => createLead()));
    clock.advanceMs(31 * MINUTE);
    await Promise.all(created.flatMap((l) => [pay(l.order_number), leads().followUp(team.teamId, l.order_number)]));
    await deliverAll();
    for (const lead of created) {
      expect(mailsTo(lead.customer.email), lead.order_number).toHaveLength(0);
      expect((await abandonedEvents(lead.order_number)).length).toBeLessThanOrEqual(1);
    }
  });

  it('a campaign with the mail off: the event only; with the follow-up off: nothing', async () => {
    const other = await team.api.patch(`/v1/campaigns/${funnel.otherCampaignId}`, { abandonment: { enabled: true, delay_minutes: 5 } });
    expect(other.status, other.text).toBe(200);
    expect(other.body.data.abandonment).toEqual({ enabled: true, delay_minutes: 5, checkout_url: null, mail: { enabled: false, subject: null, body: null } });
    const eventOnly = await createLead(funnel.otherCampaignId, funnel.offers.otherCampaign);

    const off = await team.api.post('/v1/campaigns', { name: 'No follow-up', currency: 'USD' });
    expect(off.body.data.abandonment).toMatchObject({ enabled: false, delay_minutes: 60 });
    const silentRes = await team.api.post('/checkout/leads', { campaign_id: off.body.data.id, customer: { email: email('off') } });
    expect(silentRes.status).toBe(201);

    clock.advanceMs(24 * 60 * MINUTE);
    await leads().runDue(log);
    await deliverAll();
    expect(await abandonedEvents(eventOnly.order_number)).toHaveLength(1);
    expect(hooksFor(eventOnly.order_number)).toHaveLength(1);
    expect(await mailRows(eventOnly.order_number)).toHaveLength(0);
    expect(mailsTo(eventOnly.customer.email)).toHaveLength(0);
    expect(await abandonedEvents(silentRes.body.data.order_number)).toHaveLength(0);
  });

  it("uses the campaign's own template; the preview renders drafts with a sample lead", async () => {
    const c = await team.api.post('/v1/campaigns', {
      name: 'Templated',
      currency: 'USD',
      abandonment: {
        enabled: true,
        delay_minutes: 10,
        checkout_url: 'https://shop.example/c/{order_number}?n={first_name}',
        mail: { enabled: true, subject: '{{customer.first_name}}, your cart ({{total}})', body: 'Back to it: {{checkout_url}}\n\n{{lines}}' },
      },
    });
    expect(c.status, c.text).toBe(201);
    const campaignId = c.body.data.id as string;
    const product = await team.api.post('/v1/products', { name: 'Mask' });
    const offer = await team.api.post('/v1/offers', { campaign_id: campaignId, product_id: product.body.data.id, name: 'Mask', price: 1500, billing: 'one_time', fulfillment_type: 'digital' });
    expect(offer.status, offer.text).toBe(201);

    const preview = await team.api.post(`/v1/campaigns/${campaignId}/abandonment-email/preview`, {});
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body.data).toMatchObject({ subject: 'Ada, your cart ($52.95)', checkout_url: 'https://shop.example/c/ord_SAMPLE0000000000000000?n=Ada', unknown_variables: [] });
    expect(preview.body.data.text).toContain('Back to it: https://shop.example/c/ord_SAMPLE0000000000000000?n=Ada');
    const draft = await team.api.post(`/v1/campaigns/${campaignId}/abandonment-email/preview`, { subject: '{{nope}} hi', checkout_url: 'https://x.example/{email}' });
    expect(draft.body.data).toMatchObject({ subject: 'hi', checkout_url: 'https://x.example/ada%40example.com', unknown_variables: ['nope'] });
    expect((await team.api.post(`/v1/campaigns/${campaignId}/abandonment-email/preview`, { checkout_url: 'javascript:alert(1)' })).status).toBe(422);
    const stranger = await app.newTeam('Stranger');
    expect((await stranger.api.post(`/v1/campaigns/${campaignId}/abandonment-email/preview`, {})).status).toBe(404);

    const r = await team.api.post('/checkout/leads', { campaign_id: campaignId, customer: { email: email('tpl'), first_name: 'Zoë & <Co>' }, products: [{ offer_id: offer.body.data.id, quantity: 2 }] });
    expect(r.status, r.text).toBe(201);
    clock.advanceMs(11 * MINUTE);
    await leads().runDue(log);
    await deliverAll();
    const [mail] = mailsTo(r.body.data.customer.email);
    const raw = unfolded(mail!.raw);
    const link = `https://shop.example/c/${r.body.data.order_number}?n=${encodeURIComponent('Zoë & <Co>')}`;
    expect(raw).toContain(`Back to it: ${link}`);
    expect(raw).toContain('Mask × 2: $30.00');
    const [row] = await mailRows(r.body.data.order_number);
    const shown = await team.api.get(`/v1/mail/${row!.id}`);
    expect(shown.body.data.subject).toBe('Zoë & <Co>, your cart ($30.00)');
    expect(shown.body.data.html_body).toContain(`<a href="${link.replace(/&/g, '&amp;')}">`);
    expect(shown.body.data.html_body).not.toContain('<Co>');
  });

  it('refuses bad settings with 422 and the field, changing nothing', async () => {
    const before = (await team.api.get(`/v1/campaigns/${funnel.campaignId}`)).body.data.abandonment;
    const cases: Array<[unknown, string]> = [
      [{ delay_minutes: 0 }, 'abandonment.delay_minutes'],
      [{ delay_minutes: 1.5 }, 'abandonment.delay_minutes'],
      [{ delay_minutes: 43_201 }, 'abandonment.delay_minutes'],
      [{ delay_minutes: '60' }, 'abandonment.delay_minutes'],
      [{ enabled: 'yes' }, 'abandonment.enabled'],
      [{ checkout_url: 'ftp://shop.example/{order_number}' }, 'abandonment.checkout_url'],
      [{ checkout_url: 'https://shop.example/{order_id}' }, 'abandonment.checkout_url'],
      [{ checkout_url: 'https://{email}.shop.example/' }, 'abandonment.checkout_url'],
      [{ checkout_url: 'https://shop.example/{order_number' }, 'abandonment.checkout_url'],
      [{ checkout_url: null }, 'abandonment.checkout_url'], // the mail is on: it needs the link
      [{ mail: { subject: ' ' } }, 'abandonment.mail.subject'],
      [{ mail: { enabled: true, html: '<p>' } }, 'abandonment.mail.html'],
      [{ colour: 'red' }, 'abandonment.colour'],
    ];
    for (const [abandonment, path] of cases) {
      const r = await team.api.patch(`/v1/campaigns/${funnel.campaignId}`, { abandonment });
      expect(r.status, `${JSON.stringify(abandonment)}: ${r.text}`).toBe(422);
      expect(r.body.error.code).toBe('validation_failed');
      expect(r.body.error.fields.map((f: { path: string }) => f.path), JSON.stringify(abandonment)).toContain(path);
    }
    const created = await team.api.post('/v1/campaigns', { name: 'Bad', currency: 'USD', abandonment: { mail: { enabled: true } } });
    expect(created.status).toBe(422);
    expect(created.body.error.fields).toEqual([{ path: 'abandonment.checkout_url', message: expect.stringContaining('is required') }]);
    expect((await team.api.get(`/v1/campaigns/${funnel.campaignId}`)).body.data.abandonment).toEqual(before);
    const stranger = await app.newTeam('Stranger 2');
    expect((await stranger.api.patch(`/v1/campaigns/${funnel.campaignId}`, { abandonment: { delay_minutes: 10 } })).status).toBe(404);
  });
});
