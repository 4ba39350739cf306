import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger, scrubPan } from '../src/app/logger.ts';
import { CANARY_PAN, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

// Every generated request id ends in a dashed run of digits that passes Luhn (5555 5555 5555 4444):
// the id must reach the log as it is, never taken for a card number.
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return { ...real, randomUUID: () => `${real.randomUUID().slice(0, 19)}5555-555555554444` };
});

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

  it('masks whole values by name at any depth: in arrays, errors and their causes, in any case; the logged object itself is left as it was', () => {
    const { log, lines } = captured();
    // Values a text scrub alone would only cut short (spaces, commas) and deeper than five levels.
    const secret = 'correct horse, battery staple';
    const deep = { a: { b: { c: { d: { e: { f: { g: { password: secret, kept: 'visible-1' } } } } } } } };
    const request = { headers: { Authorization: 'Basic dXNlcjpwYXNz', 'Set-Cookie': 'cs_session=abc123; HttpOnly', accept: 'application/json' } };
    const items = [{ name: 'x', SECURITY_KEY: secret }, [{ token: secret }], 'visible-2'];
    log.info({ deep, request, items }, 'nested');

    class GatewayError extends Error {
      readonly gateway = 'nmi';
      readonly params = { ccnumber: 'not-a-pan but secret', amount: 4700 };
    }
    const cause = Object.assign(new Error('the wire said no'), { api_key: secret });
    const err = new GatewayError('declined', { cause });
    log.error({ err, wrapped: new AggregateError([Object.assign(new Error('one'), { webhook_secret: secret })], 'many') }, 'failed');

    const out = lines.join('');
    expect(out).not.toContain('horse');
    expect(out).not.toContain('battery');
    expect(out).not.toContain('dXNlcjpwYXNz');
    expect(out).not.toContain('abc123');
    expect(out).not.toContain('not-a-pan');
    expect(out).toContain('visible-1');
    expect(out).toContain('visible-2');
    expect(out).toContain('"accept":"application/json"');
    const failed = JSON.parse(lines[1]!);
    // Still written as an error of its class: its message (with its cause's, as pino writes it), stack and other fields.
    expect(failed.err).toMatchObject({ type: 'GatewayError', message: 'declined: the wire said no', gateway: 'nmi', params: { ccnumber: '[REDACTED]', amount: 4700 } });
    expect(failed.err.stack).toMatch(/^Error: declined\n[^]*caused by: Error: the wire said no/);
    expect(failed.msg).toBe('failed');
    // What the caller logged is not changed by logging it.
    expect(deep.a.b.c.d.e.f.g.password).toBe(secret);
    expect(request.headers.Authorization).toBe('Basic dXNlcjpwYXNz');
    expect(err.params.ccnumber).toBe('not-a-pan but secret');
    expect((cause as Error & { api_key: string }).api_key).toBe(secret);
  });

  it("masks a child logger's bindings by name, and writes what holds nothing to mask as it was", () => {
    const { log, lines } = captured();
    log.child({ token: 'tok_live_abc def', reqId: 'req-1' }).info({ at: new Date('2026-12-01T00:00:00Z'), n: 3, url: new URL('https://example.com/a?b=1') }, 'plain');
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({ token: '[REDACTED]', reqId: 'req-1', at: '2026-12-01T00:00:00.000Z', n: 3, url: 'https://example.com/a?b=1', msg: 'plain' });
    expect(lines[0]).not.toContain('tok_live');
  });
});

/** A logger at info writing to an array of lines. */
function captured() {
  const lines: string[] = [];
  const sink = new Writable({
    write(c, _e, cb) {
      lines.push(String(c));
      cb();
    },
  });
  return { log: createLogger('info', sink), lines };
}

const dashed = CANARY_PAN.replace(/(\d{4})(?=\d)/g, '$1-');
const urlSpaced = encodeURIComponent(spaced);
const plusSpaced = spaced.replaceAll(' ', '+');

/** Log text with every separator a card number may be written with removed: no encoding of the canary survives this. */
function digitsView(text: string): string {
  return text.replace(/%20|%2[bBdD]|[ +-]/g, '');
}

describe('log redaction keeps card data out and identifiers intact', () => {
  it('masks card numbers written plain, spaced, dashed, URL-encoded or +-separated, and nothing else', () => {
    for (const pan of [CANARY_PAN, spaced, dashed, urlSpaced, plusSpaced, `4111${'%2D'}1111${'%2D'}1111${'%2D'}1111`]) {
      for (const text of [`q=${pan}&x=1`, `card ${pan}.`, `"${pan}"`, `said\\n${pan}`, `q=card%20${pan}`]) {
        const out = scrubPan(text);
        expect(out, text).toContain('[REDACTED-PAN]');
        expect(digitsView(out), text).not.toMatch(/4000056655665556|4111111111111111/);
      }
    }
    const untouched = [
      '426034f4111111111111111efcc9e1da', // a hex id with a Luhn-valid run inside
      '7c9e6679-7425-4040-9557-555555554444', // a uuid whose last groups read as a dashed card number
      '24844582-3901-4256-5555-555555554444', // a uuid of digits only: 32 digits, some of its groups pass Luhn together
      'req-5555-5555-5555-4444',
      'ord_4111111111111111',
      'cus_AbC4111111111111111xYz',
      '2026-11-21T10:00:00.000Z',
      '1763900000000', // epoch milliseconds
      '1763900000000000', // microseconds
      '1763900000000000000', // nanoseconds
      'took 10.4111111111111111 ms',
      '12345678901234567890', // too long to be a card number
      '4111111111111112', // fails Luhn
    ];
    for (const id of untouched) expect(scrubPan(`{"id":"${id}","n":${JSON.stringify(`x ${id} y`)}}`)).toBe(`{"id":"${id}","n":${JSON.stringify(`x ${id} y`)}}`);
  });

  it('masks card fields and credentials in query strings and in JSON carried as text', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(c, _e, cb) {
        lines.push(String(c));
        cb();
      },
    });
    const log = createLogger('info', sink);
    const urls = [
      `/v1/orders?cvv=${CVV}&limit=1`,
      `/v1/orders?card_cvv=${CVV}`,
      `/v1/orders?x=1&cvv2=${CVV}#top`,
      `/v1/orders?security_code=${CVV}`,
      `/v1/orders?payment%5Bcard_cvv%5D=${CVV}`,
      `/v1/orders?payment[cvv]=${CVV}`,
      `/x?return_url=https%3A%2F%2Fshop.example%2Fpay%3Fcvv%3D${CVV}%26a%3D1`,
    ];
    for (const url of urls) log.info({ req: { method: 'GET', url } }, 'incoming request');
    log.error({ err: new Error(`gateway echoed {"card_cvv":"${CVV}","cvv":${CVV}}`), deep: { a: { b: { c: { d: { e: { cvv: CVV } } } } } } }, 'failed');
    const out = lines.join('');
    expect(out).not.toContain(CVV);
    expect(out).toContain('cvv=[REDACTED]&limit=1');
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('no route logs the canary card number or CVV, and request ids reach the log unchanged', async () => {
    const spec = await app.anonymous.get('/openapi.json');
    // /healthz and /readyz log their requests only at warn (probes every few seconds would drown the log).
    const quiet = new Set(['/healthz', '/readyz']);
    const documented = Object.entries(spec.body.paths as Record<string, Record<string, unknown>>)
      .filter(([path]) => !quiet.has(path))
      .flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })));
    // Served but left out of the API description.
    const hidden = [
      { method: 'POST', path: '/webhooks/gateways/{gateway_id}' },
      { method: 'POST', path: '/webhooks/extpay' },
      { method: 'GET', path: '/metrics' },
      { method: 'GET', path: '/openapi.json' },
    ];
    const routes = [...documented, ...hidden];
    expect(documented.length).toBeGreaterThan(50);

    const query = `q=${urlSpaced}&n=${plusSpaced}&d=${dashed}&pan=${CANARY_PAN}&cvv=${CVV}&card_cvv=${CVV}&cvv2=${CVV}&security_code=${CVV}`;
    const body = { note: `card ${spaced}`, card_number: dashed, cvv: CVV, payment: { card_number: CANARY_PAN, card_cvv: CVV, security_code: CVV } };
    const clientIds = ['426034f5555555555554444efcc9e1da', '7c9e6679-7425-4040-9557-555555554444', 'req-5555-5555-5555-4444'];
    const generated: string[] = [];
    const before = app.logs.length;

    for (const [i, route] of routes.entries()) {
      const clientId = clientIds[i % clientIds.length]!;
      const withQuery = await team.api.request(route.method, `${route.path.replace(/\{[^}]+\}/g, urlSpaced)}?${query}`, undefined, { 'x-request-id': clientId });
      expect(withQuery.headers.get('x-request-id'), `${route.method} ${route.path}`).toBe(clientId);
      const hasBody = ['POST', 'PATCH', 'PUT'].includes(route.method);
      const withBody = await team.api.request(route.method, `${route.path.replace(/\{[^}]+\}/g, dashed)}?${query}`, hasBody ? body : undefined);
      generated.push(withBody.headers.get('x-request-id')!);
    }

    const text = app.logs.slice(before).join('\n');
    expect(digitsView(text)).not.toContain(CANARY_PAN);
    expect(text).not.toMatch(new RegExp(`(?<![\\w.-])${CVV}(?![\\w.])`));
    // The canary was logged (each request's URL) and masked, not merely absent.
    expect(text.split('cvv=[REDACTED]').length - 1).toBeGreaterThanOrEqual(routes.length * 2);
    expect(text.split('[REDACTED-PAN]').length - 1).toBeGreaterThanOrEqual(routes.length * 2);
    for (const id of clientIds) expect(text).toContain(`"reqId":"${id}"`);
    expect(new Set(generated).size).toBe(routes.length);
    for (const id of generated) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-5555-555555554444$/);
      expect(text).toContain(`"reqId":"${id}"`);
    }
  });
});
