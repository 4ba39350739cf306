import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { WebhookSigner } from './signing.ts';

describe('WebhookSigner', () => {
  it("signs as the standardwebhooks package does, and its signatures verify with the package", () => {
    const bodies = ['', '{"id":"evt_1","type":"order.completed"}', JSON.stringify({ name: 'Zoë 🛒', note: 'a\nb' }), JSON.stringify({ big: 'x'.repeat(70_000) })];
    for (let i = 0; i < 20; i++) {
      const secret = `whsec_${randomBytes(1 + (i % 40)).toString('base64')}`;
      const at = new Date(1_700_000_000_000 + i * 123_457);
      const id = `evt_${randomBytes(8).toString('hex')}`;
      for (const body of bodies) {
        const ours = new WebhookSigner(secret).sign(id, at, body);
        expect(ours).toBe(new Webhook(secret).sign(id, at, body));
        if (body === '') continue; // the package's verify parses the body as JSON
        const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': new WebhookSigner(secret).sign(id, new Date(), body) };
        expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
      }
    }
    // The prefix is optional, as for the package.
    const raw = randomBytes(24).toString('base64');
    expect(new WebhookSigner(raw).sign('m', new Date(0), 'b')).toBe(new WebhookSigner(`whsec_${raw}`).sign('m', new Date(0), 'b'));
  });

  it('refuses a secret that is not base64, or is empty, as the package does', () => {
    for (const secret of ['whsec_', 'whsec_not base64!', 'whsec_***']) {
      expect(() => new Webhook(secret)).toThrow();
      expect(() => new WebhookSigner(secret)).toThrow(/whsec_ and a non-empty base64 key/);
    }
  });
});
