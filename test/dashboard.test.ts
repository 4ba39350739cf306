/**
 * The dashboard's HTTP side (src/app/dashboard.ts): /dashboard and every path under it answer the
 * app's index.html (no-cache), hashed assets a year's immutable cache (gzip when asked), a missing
 * asset 404, nothing outside the build, nothing in the OpenAPI; without a build, a page saying how
 * to build it. The built app comes from `npm install` (postinstall); built here when missing.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST, registerDashboard } from '../src/app/dashboard.ts';
import { startTestApp, type TestApp } from './support/harness.ts';

let app: TestApp;
let index: string;

beforeAll(async () => {
  if (!fs.existsSync(path.join(DASHBOARD_DIST, 'index.html'))) execFileSync('npm', ['run', 'build:dashboard'], { stdio: 'inherit' });
  index = fs.readFileSync(path.join(DASHBOARD_DIST, 'index.html'), 'utf8');
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const get = (p: string, headers: Record<string, string> = {}) => fetch(`${app.url}${p}`, { headers, redirect: 'manual' });

describe('GET /dashboard', () => {
  it('answers the app (index.html, not cached) at /dashboard and at any path under it', async () => {
    for (const p of ['/dashboard', '/dashboard/', '/dashboard/orders/x', '/dashboard/orders/ord_123?tab=timeline']) {
      const r = await get(p);
      expect(r.status, p).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('cache-control')).toBe('no-cache');
      expect(r.headers.get('x-frame-options')).toBe('DENY');
      expect(r.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(await r.text()).toBe(index);
    }
  });

  it('serves the hashed assets with a long immutable cache, gzipped when the browser takes it', async () => {
    const scripts = [...index.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.some((s) => s.endsWith('.js'))).toBe(true);
    let gzipped = 0;
    for (const asset of scripts) {
      const plain = await get(asset, { 'accept-encoding': 'identity' });
      expect(plain.status, asset).toBe(200);
      expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(plain.headers.get('content-type')).toMatch(asset.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      const body = Buffer.from(await plain.arrayBuffer());
      expect(body.equals(fs.readFileSync(path.join(DASHBOARD_DIST, asset.slice('/dashboard/'.length))))).toBe(true);
      // fetch asks for gzip and inflates it: the header says what came over the wire. A file of
      // 1 KiB or less (a tiny shared chunk) is not worth compressing and comes as it is.
      const gz = await get(asset);
      expect(gz.headers.get('content-encoding'), asset).toBe(body.length > 1024 ? 'gzip' : null);
      expect(Buffer.from(await gz.arrayBuffer()).equals(body)).toBe(true);
      if (body.length > 1024) gzipped++;
    }
    expect(gzipped).toBeGreaterThanOrEqual(2); // the entry script and the stylesheet at least
  });

  it('answers 404 for a missing asset and never serves a file outside the build', async () => {
    const missing = await get('/dashboard/assets/index-missing.js');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('cache-control')).toBe('no-store');
    for (const p of ['/dashboard/..%2f..%2f..%2fpackage.json', '/dashboard/%2e%2e/%2e%2e/%2e%2e/package.json', '/dashboard/assets/..%2f..%2f..%2f..%2fpackage.json']) {
      const r = await get(p);
      const text = await r.text();
      expect(text, p).not.toContain('"workspaces"');
    }
  });

  it('is not part of the API document', async () => {
    const spec = (await app.anonymous.get('/openapi.json')).body;
    expect(Object.keys(spec.paths).filter((p) => p.startsWith('/dashboard'))).toEqual([]);
  });

  it('without a build, /dashboard says how to build it', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-nodist-'));
    const server = Fastify();
    await registerDashboard(server, { distDir: empty });
    try {
      for (const url of ['/dashboard', '/dashboard/orders']) {
        const r = await server.inject({ url });
        expect(r.statusCode).toBe(503);
        expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(r.body).toContain('npm run build:dashboard');
      }
    } finally {
      await server.close();
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });
});
