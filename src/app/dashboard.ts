import fs from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { fromRoot } from './project-root.ts';

/** Where `npm run build:dashboard` (vite build, run by `npm install`'s postinstall) writes the app. */
export const DASHBOARD_DIST = fromRoot('web/dashboard/dist') + path.sep;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.svg', '.map', '.txt']);

/** Vite's content-hashed files: a new build gets new names, so a year's cache is safe. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** index.html names the current hashed files: always asked for again. */
const NO_CACHE = 'no-cache';

// Mantine sets inline styles (CSS variables); scripts only from here; never framed (refunds are a click).
const CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dashboard not built</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}code{background:#f1f3f5;padding:.1em .3em;border-radius:3px}</style></head>
<body><h1>The dashboard is not built</h1>
<p>Checkstand serves the merchant dashboard from <code>web/dashboard/dist</code>, which <code>npm install</code> builds (its <code>postinstall</code> step). It is missing here, for example after <code>npm install --ignore-scripts</code>.</p>
<p>Build it with <code>npm run build:dashboard</code>, then reload this page (no restart needed).</p>
<p>The API is running: <a href="/docs">API docs</a>.</p></body></html>`;

interface CachedFile {
  body: Buffer;
  gzip: Buffer | null;
  mtimeMs: number;
}

/**
 * The merchant dashboard (web/dashboard, a Vite + React single-page app) at /dashboard: hashed
 * assets with a long cache, every other path under /dashboard answered with index.html (the app's
 * router takes it from there), gzip when the browser takes it. Hidden from the OpenAPI document; the
 * app calls the API with the session cookie and CSRF header like any browser client.
 */
export async function registerDashboard(app: FastifyInstance, opts: { distDir?: string } = {}): Promise<void> {
  const root = path.resolve(opts.distDir ?? DASHBOARD_DIST);
  const cache = new Map<string, CachedFile>();

  async function load(file: string): Promise<CachedFile | null> {
    let stat;
    try {
      stat = await fs.stat(file);
    } catch {
      return null;
    }
    if (!stat.isFile()) return null;
    const hit = cache.get(file);
    if (hit && hit.mtimeMs === stat.mtimeMs) return hit;
    const body = await fs.readFile(file);
    const ext = path.extname(file);
    const entry = { body, gzip: COMPRESSIBLE.has(ext) && body.length > 1024 ? gzipSync(body) : null, mtimeMs: stat.mtimeMs };
    cache.set(file, entry);
    return entry;
  }

  function send(req: FastifyRequest, reply: FastifyReply, file: string, entry: CachedFile, cacheControl: string) {
    reply.header('content-type', TYPES[path.extname(file)] ?? 'application/octet-stream').header('cache-control', cacheControl).header('x-content-type-options', 'nosniff');
    reply.header('vary', 'accept-encoding');
    if (entry.gzip && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) return reply.header('content-encoding', 'gzip').send(entry.gzip);
    return reply.send(entry.body);
  }

  async function sendIndex(req: FastifyRequest, reply: FastifyReply) {
    const index = path.join(root, 'index.html');
    const entry = await load(index);
    reply.header('content-security-policy', CSP).header('x-frame-options', 'DENY').header('referrer-policy', 'same-origin');
    if (!entry) return reply.code(503).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(NOT_BUILT);
    return send(req, reply, index, entry, NO_CACHE);
  }

  const hidden = { schema: { hide: true }, logLevel: 'warn' as const };
  app.get('/dashboard', hidden, sendIndex);
  app.get('/dashboard/*', hidden, async (req, reply) => {
    const rest = (req.params as { '*'?: string })['*'] ?? '';
    // A file of the build (assets/…): served when it exists inside dist, never outside it.
    if (rest && path.extname(rest)) {
      const file = path.resolve(root, rest);
      if (file.startsWith(root + path.sep) && path.basename(file) !== 'index.html') {
        const entry = await load(file);
        if (entry) return send(req, reply, file, entry, rest.startsWith('assets/') ? IMMUTABLE : NO_CACHE);
      }
      // A missing asset is a 404, not the app: a stale index.html naming an old build must fail loudly.
      if (rest.startsWith('assets/')) return reply.code(404).header('content-type', 'text/plain; charset=utf-8').header('cache-control', 'no-store').send('Not found\n');
    }
    return sendIndex(req, reply);
  });
}
