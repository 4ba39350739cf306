import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMatrix, permissionMatrixMarkdown } from '../src/modules/access/matrix.ts';
import { PERMISSIONS, PROVIDER_PERMISSIONS, ROLE_NAMES, ROLES } from '../src/modules/access/permissions.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/**
 * The permission matrix, generated from /openapi.json: every route × every role and provider kind
 * answers as the README's matrix says — 403 permission_denied when the column lacks the route's
 * permission, anything but 401/403 when it holds it.
 */
let app: TestApp;
let team: TestTeam;
const readme = fs.readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const principals: { column: string; api: ApiClient }[] = [];

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam('Matrix');
  for (const role of ROLES) {
    const body = role === 'affiliate' ? { name: role, role, affiliate_ids: ['AFF1'] } : { name: role, role };
    const r = await team.api.post('/v1/api-tokens', body);
    expect(r.status, r.text).toBe(201);
    principals.push({ column: ROLE_NAMES[role], api: new ApiClient(app.url, r.body.data.secret) });
  }
  // A provider's users act with their grant's permissions: tokens holding exactly those sets stand in
  // for them here (test/sessions*.test.ts logs provider users in for real). The CS provider with every optional grant.
  const cs = PROVIDER_PERMISSIONS.customer_service;
  for (const [column, permissions] of [
    ['Customer Service Provider', [...cs.base]],
    ['Customer Service Provider (all optional grants)', [...cs.base, ...cs.optional]],
    ['Affiliate Provider', [...PROVIDER_PERMISSIONS.affiliate.base]],
  ] as const) {
    const r = await team.api.post('/v1/api-tokens', { name: column, permissions, ...(column === 'Affiliate Provider' ? { affiliate_ids: ['AFF1'] } : {}) });
    expect(r.status, r.text).toBe(201);
    principals.push({ column, api: new ApiClient(app.url, r.body.data.secret) });
  }
});
afterAll(async () => app?.close());

describe('the permission matrix', () => {
  it("README's matrix is the catalogue's (regenerate it from permissionMatrixMarkdown() when roles change)", () => {
    expect(readme).toContain(permissionMatrixMarkdown());
  });

  it('every /checkout and /v1 operation declares a known permission', async () => {
    const spec = (await app.anonymous.get('/openapi.json')).body as { paths: Record<string, Record<string, { 'x-permission'?: string }>> };
    const undeclared: string[] = [];
    for (const [path, ops] of Object.entries(spec.paths)) {
      if (!path.startsWith('/v1/') && !path.startsWith('/checkout/')) continue;
      for (const [method, op] of Object.entries(ops)) {
        const p = op['x-permission'];
        if (!p || (p !== 'public' && !(p in PERMISSIONS))) undeclared.push(`${method} ${path}`);
      }
    }
    expect(undeclared).toEqual([]);
  });

  it('every route × every role and provider kind: allowed exactly where the README says, 403 elsewhere', async () => {
    const matrix = parseMatrix(readme);
    const columnOf = (column: string) => {
      if (column === 'Customer Service Provider (all optional grants)') {
        return { all: new Set<string>([...PROVIDER_PERMISSIONS.customer_service.base, ...PROVIDER_PERMISSIONS.customer_service.optional]), own: new Set<string>() };
      }
      return matrix.get(column)!;
    };
    const spec = (await app.anonymous.get('/openapi.json')).body as { paths: Record<string, Record<string, { 'x-permission'?: string; 'x-affiliate-scope'?: boolean }>> };
    const mismatches: string[] = [];
    let checked = 0;
    for (const [path, ops] of Object.entries(spec.paths)) {
      if (!path.startsWith('/v1/') && !path.startsWith('/checkout/')) continue;
      for (const [method, op] of Object.entries(ops)) {
        const permission = op['x-permission']!;
        if (permission === 'public') continue;
        // Ids nobody has: an allowed caller gets 404 or 422, never 401/403; nothing is changed.
        const url = path.replace(/\{[^}]+\}/g, 'zz_missing0');
        const body = ['post', 'patch', 'put'].includes(method) ? {} : undefined;
        for (const { column, api } of principals) {
          const held = columnOf(column);
          const allowed = held.all.has(permission) || (held.own.has(permission) && op['x-affiliate-scope'] === true);
          const r = await api.request(method.toUpperCase(), url, body);
          const denied = r.status === 403 && r.body?.error?.code === 'permission_denied';
          if (allowed === denied || r.status === 401) {
            mismatches.push(`${column}: ${method.toUpperCase()} ${path} (${permission}) → ${r.status} ${r.body?.error?.code ?? ''}, expected ${allowed ? 'allowed' : '403'}`);
          }
          if (denied) expect(r.body.data).toEqual({ permission });
          checked++;
        }
      }
    }
    expect(mismatches).toEqual([]);
    expect(checked).toBeGreaterThan(100 * principals.length);
    // ~1,300 sequential requests: a loaded machine needs longer than the default 30 s.
  }, 600_000);
});
