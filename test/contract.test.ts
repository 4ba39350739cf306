/**
 * The contract check (src/app/contract-check.ts, on in the suite through test/support/harness.ts):
 * a spoiled OpenAPI document makes the answers it no longer describes fail loudly (a 500 and a
 * logged `contract violation`), while the answers it still describes pass untouched. Without the
 * check, every request below would answer as usual.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
type Doc = { paths: Record<string, Record<string, { responses: Record<string, unknown> }>>; components: { schemas: Record<string, any> } };
let doc: Doc;

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam();
  // The server's own document, as /openapi.json serves it, spoiled in two places before any request reads it.
  doc = app.server.swagger() as unknown as Doc;
  doc.components.schemas.Product.properties.name = { type: 'integer' };
  delete doc.paths['/v1/coupons/{id}']!.get!.responses['404'];
});
afterAll(async () => app?.close());

const violations = () => app.logs.filter((l) => l.includes('"contract violation"')).map((l) => JSON.parse(l).contract as { route: string; problem: string });

describe('the contract check', () => {
  it('is on in the suite and the real document describes the real answers', async () => {
    expect(process.env.CHECKSTAND_CONTRACT_CHECK).toBe('1');
    const c = await team.api.post('/v1/campaigns', { name: 'Contract', currency: 'USD' });
    expect(c.status, c.text).toBe(201);
    expect((await team.api.get('/v1/campaigns?limit=1')).status).toBe(200);
    expect((await team.api.get('/v1/campaigns/cmp_nothere')).status).toBe(404);
    expect(violations()).toEqual([]);
  });

  it('fails an answer its schema no longer describes: 500, and the mismatch logged', async () => {
    const r = await team.api.post('/v1/products', { name: 'Serum' });
    expect(r.status, r.text).toBe(500);
    expect(r.body.error.code).toBe('internal');
    expect(violations()).toContainEqual(expect.objectContaining({ route: 'POST /v1/products → 201', problem: 'the body does not match the documented schema' }));
    const line = app.logs.find((l) => l.includes('"contract violation"') && l.includes('/v1/products'))!;
    expect(JSON.parse(line).contract.detail.errors).toContainEqual(expect.objectContaining({ instancePath: '/data/name', keyword: 'type' }));
  });

  it('fails a status the route does not document', async () => {
    const r = await team.api.get('/v1/coupons/coup_nothere');
    expect(r.status).toBe(500);
    expect(violations()).toContainEqual(expect.objectContaining({ route: 'GET /v1/coupons/:id → 404', problem: 'status 404 is not documented for this route' }));
    expect(violations().filter((v) => v.route.startsWith('GET /v1/coupons'))).toHaveLength(1);
  });
});
