import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.ts';

/**
 * Every change (POST, PATCH, PUT, DELETE) in /openapi.json names the audit action it writes
 * (`x-audit`, from the route's `config.audit`), or is listed here with the reason it writes none.
 * A new route that changes something fails this test until it declares one or is listed.
 */
const NOT_AUDITED: Record<string, string> = {
  'POST /v1/sessions': 'login: public, no principal yet; failures are counted by the login throttle',
  'DELETE /v1/session': 'logout ends only the caller\'s own session',
  'POST /v1/session/team': 'switching the active team changes only the caller\'s own session',
  'POST /v1/session/totp': 'starting two-factor enrolment activates nothing (turning it on is audited: user.totp_enabled)',
  'POST /v1/password-resets': 'public: mails a link, changes nothing',
  'POST /v1/password-resets/confirm': 'public, no principal: the reset token is the proof; every session is logged out',
  'POST /v1/affiliates/{id}/throttle/simulate': 'a simulation: computes, stores nothing',
  'POST /v1/extpay-connections/{id}/test': 'a diagnostic call to the provider: stores nothing',
  'POST /v1/extpay-connections/{id}/doctor': 'a diagnostic: stores nothing',
  'POST /v1/gateways/{id}/doctor': 'a diagnostic: stores nothing',
  'POST /v1/campaigns/{id}/purchase-email/preview': 'renders a preview: stores nothing',
  'POST /v1/campaigns/{id}/abandonment-email/preview': 'renders a preview: stores nothing',
  'POST /v1/customers/{customer_number}/notes': 'a note is itself a record of who wrote what and when (author, created_at)',
  'POST /v1/tickets': 'support conversations record their own author and time; not money, settings or access',
  'PATCH /v1/tickets/{id}': 'support conversations record their own author and time; not money, settings or access',
  'POST /v1/tickets/{id}/messages': 'support conversations record their own author and time; not money, settings or access',
  'POST /v1/tickets/{id}/attachments': 'support conversations record their own author and time; not money, settings or access',
};
/** Whole families, with the reason. */
const NOT_AUDITED_PREFIXES: [string, string][] = [
  ['/checkout/', "the checkout (leads, payments, upsells, captures): recorded in the ledger and the order's timeline (README: audit log)"],
  ['/webhooks/', 'provider webhooks: no principal; stored once each in the inbound events of their effect'],
];
const CHANGES = new Set(['post', 'patch', 'put', 'delete']);

let app: TestApp;
let spec: { paths: Record<string, Record<string, { 'x-audit'?: string; 'x-permission'?: string }>> };
beforeAll(async () => {
  app = await startTestApp();
  spec = (await app.anonymous.get('/openapi.json')).body;
});
afterAll(async () => app?.close());

describe('audit coverage', () => {
  it('every POST/PATCH/PUT/DELETE declares x-audit, or is allowlisted with a reason', () => {
    const missing: string[] = [];
    const audited: string[] = [];
    const seen = new Set<string>();
    for (const [path, ops] of Object.entries(spec.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!CHANGES.has(method)) continue;
        const key = `${method.toUpperCase()} ${path}`;
        seen.add(key);
        if (op['x-audit']) {
          audited.push(key);
          expect(op['x-audit'], key).toMatch(/^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/);
          continue;
        }
        if (NOT_AUDITED[key] || NOT_AUDITED_PREFIXES.some(([prefix]) => path.startsWith(prefix))) continue;
        missing.push(key);
      }
    }
    expect(missing).toEqual([]);
    // The money actions and access changes are among the audited ones.
    for (const key of ['POST /v1/orders/{order_number}/refunds', 'POST /v1/orders/{order_number}/void', 'POST /v1/api-tokens', 'PATCH /v1/members/{id}', 'POST /v1/provider-grants']) {
      expect(audited, key).toContain(key);
    }
    // The allowlist names only routes that exist and are unaudited (a stale entry would hide nothing, but misleads).
    for (const key of Object.keys(NOT_AUDITED)) {
      expect(seen.has(key), `allowlisted ${key} is not a route`).toBe(true);
      expect(audited, `allowlisted ${key} declares x-audit: drop it from the list`).not.toContain(key);
    }
    for (const reason of [...Object.values(NOT_AUDITED), ...NOT_AUDITED_PREFIXES.map(([, r]) => r)]) expect(reason.length).toBeGreaterThan(10);
  });

  it('x-audit sits next to x-permission on the operation', () => {
    const refund = spec.paths['/v1/orders/{order_number}/refunds']!.post!;
    expect(refund).toMatchObject({ 'x-permission': 'orders:refund', 'x-audit': 'order.refunded' });
    expect(spec.paths['/v1/orders']!.get!['x-audit']).toBeUndefined();
  });
});
