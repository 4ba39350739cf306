/**
 * The provider transport (src/providers/transport.ts): undici's `request` on a keep-alive pool,
 * which the card gateway, 3-D Secure and extpay adapters use instead of `fetch` (issue 13). Against
 * a real local server: answers keep status and body, redirects are never followed, the timeout
 * covers the body too, a refused connection is a network failure with its code, and consecutive
 * calls reuse their connections.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { undiciTransport } from '../src/providers/transport.ts';

describe('undiciTransport', () => {
  let server: http.Server;
  let base: string;
  let connections = 0;
  let followed = 0;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => {
        if (req.url === '/echo') return res.writeHead(201, { 'content-type': 'text/plain' }).end(`${req.method} ${req.headers['content-type']} ${body}`);
        if (req.url === '/redirect') return res.writeHead(302, { location: '/target' }).end();
        if (req.url === '/target') {
          followed++;
          return res.end('followed');
        }
        if (req.url === '/slow-body') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('partial');
          setTimeout(() => res.end(' rest'), 1_500).unref();
          return;
        }
        res.writeHead(404).end();
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const post = (path: string, timeoutMs = 5_000) => undiciTransport(base + path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1&b=2', timeoutMs });

  it('gives back the status and the body, and reuses its connections for consecutive calls', async () => {
    const before = connections;
    for (let i = 0; i < 6; i++) expect(await post('/echo')).toEqual({ ok: true, status: 201, body: 'POST application/x-www-form-urlencoded a=1&b=2' });
    // undici may open a second connection while the first call's answer is still being settled; never one per call.
    expect(connections - before).toBeLessThanOrEqual(2);
  });

  it('never follows a redirect: the 302 is the answer', async () => {
    const r = await post('/redirect');
    expect(r).toMatchObject({ ok: true, status: 302 });
    expect(followed).toBe(0);
  });

  it('times out when the body does not arrive in time, though the status line did', async () => {
    expect(await post('/slow-body', 300)).toEqual({ ok: false, kind: 'timeout', code: null });
  });

  it('a refused connection is a network failure with its code', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const r = await undiciTransport(`http://127.0.0.1:${port}/x`, { method: 'GET', headers: {}, body: undefined, timeoutMs: 2_000 });
    expect(r).toEqual({ ok: false, kind: 'network', code: 'ECONNREFUSED' });
  });
});
