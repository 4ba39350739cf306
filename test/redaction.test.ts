import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, scrubPan } from '../src/app/logger.ts';
import { CANARY_PAN, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
});
afterAll(async () => app?.close());

const CVV = '9731';
const spaced = CANARY_PAN.replace(/(\d{4})(?=\d)/g, '$1 ');

describe('card data never leaves the request', () => {
  it('keeps a canary card number and CVV out of logs, error bodies and the database', async () => {
    const bodies: string[] = [];
    const base = { campaign_id: funnel.campaignId, currency: 'USD', customer: { email: email() }, products: [{ offer_id: funnel.offers.serum, quantity: 1 }] };
    const attempts: Array<[string, unknown]> = [
      // a full payment attempt (declined: no gateway yet) — the card reaches the payment core
      ['/checkout/orders', { ...base, payment: { card_number: CANARY_PAN, card_exp: '12/39', card_cvv: CVV } }],
      // spaced number, bad CVV: a validation error over the card fields
      ['/checkout/orders', { ...base, payment: { card_number: spaced, card_exp: '12/39', card_cvv: `${CVV}99` } }],
      // wrong types: the number as a JSON number
      ['/checkout/orders', { ...base, payment: { card_number: Number(CANARY_PAN), card_exp: 1239, card_cvv: Number(CVV) } }],
      // card fields where they are not allowed at all
      ['/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() }, card_number: CANARY_PAN, card_cvv: CVV }],
      ['/checkout/orders', { ...base, payment: { method: 'extpay', return_url: 'https://x.example', card_number: CANARY_PAN, card_cvv: CVV } }],
    ];
    for (const [path, body] of attempts) {
      const r = await team.api.post(path, body, { 'idempotency-key': `canary-${bodies.length}-${Date.now()}` });
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      bodies.push(r.text);
    }
    // malformed JSON carrying the number
    const broken = await team.api.request('POST', '/checkout/orders', `{"payment":{"card_number":"${CANARY_PAN}"`, { 'content-type': 'application/json' });
    expect(broken.status).toBe(400);
    bodies.push(broken.text);

    for (const text of [...bodies, app.logs.join('\n')]) {
      expect(text).not.toContain(CANARY_PAN);
      expect(text).not.toContain(spaced);
      expect(text).not.toMatch(new RegExp(`"card_cvv"\\s*:\\s*"?${CVV}`));
    }
    expect(app.logs.length).toBeGreaterThan(10);
    expect(app.logs.join('\n')).not.toContain(team.token);

    const dump = await app.store.run(async (db) =>
      JSON.stringify([
        await db.selectFrom('transactions').selectAll().execute(),
        await db.selectFrom('orders').selectAll().execute(),
        await db.selectFrom('order_events').selectAll().execute(),
        await db.selectFrom('idempotency_keys').selectAll().execute(),
      ]),
    );
    expect(dump).not.toContain(CANARY_PAN);
    expect(dump).toContain(CANARY_PAN.slice(-4)); // last 4 is kept, as designed
  });

  it('redacts card fields and credentials at any depth, and masks PANs in free text', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(c, _e, cb) {
        lines.push(String(c));
        cb();
      },
    });
    const log = createLogger('info', sink);
    log.info({ req: { headers: { authorization: 'Bearer csk_secret' } }, body: { payment: { card_number: CANARY_PAN, card_cvv: CVV, card_exp: '12/39' } } }, 'x');
    log.error({ err: new Error(`gateway said ${CANARY_PAN} is bad`) }, 'failed');
    const out = lines.join('');
    expect(out).not.toContain(CANARY_PAN);
    expect(out).not.toContain('csk_secret');
    expect(out).not.toContain(CVV);
    expect(out).toContain('[REDACTED]');
    expect(scrubPan(`n=${spaced}; took 10.1234567890123 ms at 2026-11-21T10:00:00.000Z`)).toBe('n=[REDACTED-PAN]; took 10.1234567890123 ms at 2026-11-21T10:00:00.000Z');
  });
});
