import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('operations', () => {
  it('answers health and readiness', async () => {
    expect((await app.anonymous.get('/healthz')).status).toBe(200);
    const ready = await app.anonymous.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
  });

  it('refuses /v1 and /checkout without a token, in the envelope', async () => {
    for (const path of ['/v1/orders', '/checkout/orders']) {
      const r = path.startsWith('/checkout') ? await app.anonymous.post(path, {}) : await app.anonymous.get(path);
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ success: false, data: null, error: { code: 'unauthenticated' } });
    }
  });

  it('serves OpenAPI and metrics', async () => {
    const spec = await app.anonymous.get('/openapi.json');
    expect(spec.status).toBe(200);
    expect(spec.body.openapi).toMatch(/^3\./);
    const metrics = await app.anonymous.get('/metrics');
    expect(metrics.text).toContain('checkstand_http_requests_total');
    expect(metrics.text).toContain('checkstand_db_pool_connections');
  });
});
