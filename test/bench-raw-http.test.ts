/**
 * The bench driver's default client (`--client raw`, bench/raw-http.ts) against real servers on
 * loopback: the requests it writes, the answers it reads (Content-Length, chunked, split across
 * packets), its kept-alive sockets, and how it fails (a timeout, a socket closed mid-answer).
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeChunked, parseHead, rawApi } from '../bench/raw-http.ts';

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  socket: net.Socket;
}

async function httpServer(answer: (seen: Seen, res: http.ServerResponse) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), socket: req.socket };
      seen.push(s);
      answer(s, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise<void>((r) => server.close(() => r())));
  closers.push(() => server.closeAllConnections());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function client(url: string, timeoutMs = 5000) {
  const c = rawApi(url, 'csk_test', timeoutMs);
  closers.push(() => c.close());
  return c;
}

describe('bench raw HTTP client', () => {
  it('writes a JSON POST with the token and extra headers, and reuses one kept-alive socket for calls in sequence', async () => {
    const { url, seen } = await httpServer((s, res) => {
      res.writeHead(201, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ success: true, echo: JSON.parse(s.body) }));
    });
    const c = client(url);
    const a = await c.POST('/checkout/leads', { body: { email: 'ünïcode@example.com', n: 1 }, headers: { 'idempotency-key': 'k-1' } });
    const b = await c.POST('/checkout/orders/payment', { body: { n: 2 } });
    const d = await c.POST('/checkout/orders/upsell', { body: { n: 3 } });

    expect(a).toEqual({ data: { success: true, echo: { email: 'ünïcode@example.com', n: 1 } }, response: { status: 201 } });
    expect((b.data as { echo: unknown }).echo).toEqual({ n: 2 });
    expect((d.data as { echo: unknown }).echo).toEqual({ n: 3 });
    expect(seen.map((s) => [s.method, s.url])).toEqual([
      ['POST', '/checkout/leads'],
      ['POST', '/checkout/orders/payment'],
      ['POST', '/checkout/orders/upsell'],
    ]);
    expect(seen[0]!.headers).toMatchObject({
      authorization: 'Bearer csk_test',
      'content-type': 'application/json',
      'idempotency-key': 'k-1',
      // the byte length, not the string's: the e-mail has two two-byte letters
      'content-length': String(Buffer.byteLength(seen[0]!.body)),
    });
    expect(seen[1]!.headers['idempotency-key']).toBeUndefined();
    expect(new Set(seen.map((s) => s.socket)).size).toBe(1);
    expect(c.open).toBe(1);
  });

  it('opens one socket per call in flight, then keeps them all', async () => {
    const { url, seen } = await httpServer((_s, res) => setTimeout(() => res.end('{}'), 20));
    const c = client(url);
    await Promise.all([1, 2, 3, 4].map((n) => c.POST('/x', { body: { n } })));
    await Promise.all([1, 2, 3, 4].map((n) => c.POST('/x', { body: { n } })));
    expect(seen).toHaveLength(8);
    expect(new Set(seen.map((s) => s.socket)).size).toBe(4);
    expect(c.open).toBe(4);
  });

  it('answers a non-2xx as error (its JSON parsed), and a body that is not JSON as text', async () => {
    const { url } = await httpServer((s, res) => {
      if (s.url === '/bad') {
        res.writeHead(422, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ success: false, message: 'Invalid request.' }));
      } else {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('plain words');
      }
    });
    const c = client(url);
    expect(await c.POST('/bad', { body: {} })).toEqual({ error: { success: false, message: 'Invalid request.' }, response: { status: 422 } });
    expect(await c.POST('/text', { body: {} })).toEqual({ data: 'plain words', response: { status: 200 } });
  });

  it('reads a chunked answer, and an answer that arrives a few bytes at a time', async () => {
    const { url } = await httpServer((_s, res) => {
      // No Content-Length: node:http sends it chunked.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"a":');
      setTimeout(() => res.end('[1,2,3]}'), 10);
    });
    const c = client(url);
    expect(await c.POST('/chunked', { body: {} })).toEqual({ data: { a: [1, 2, 3] }, response: { status: 200 } });

    const dribble = net.createServer((sock) => {
      sock.once('data', () => {
        const answer = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}';
        let i = 0;
        const t = setInterval(() => {
          sock.write(answer.slice(i, i + 7));
          i += 7;
          if (i >= answer.length) clearInterval(t);
        }, 2);
      });
    });
    await new Promise<void>((r) => dribble.listen(0, '127.0.0.1', r));
    // Closed after the client (the closers run last first): close() waits for its kept-alive socket.
    closers.push(() => new Promise<void>((r) => dribble.close(() => r())));
    const c2 = client(`http://127.0.0.1:${(dribble.address() as AddressInfo).port}`);
    expect(await c2.POST('/slow', { body: {} })).toEqual({ data: { ok: true }, response: { status: 200 } });
  });

  it('drops a socket whose answer says Connection: close, and opens a new one for the next call', async () => {
    const { url, seen } = await httpServer((_s, res) => {
      res.writeHead(200, { connection: 'close', 'content-type': 'application/json' });
      res.end('{}');
    });
    const c = client(url);
    await c.POST('/a', { body: {} });
    await c.POST('/b', { body: {} });
    expect(seen).toHaveLength(2);
    expect(seen[0]!.socket).not.toBe(seen[1]!.socket);
  });

  it('fails with TimeoutError when no answer comes within the timeout, and ECONNRESET when the socket closes mid-answer', async () => {
    const { url } = await httpServer((s, res) => {
      if (s.url === '/cut') {
        res.writeHead(200, { 'content-length': '100' });
        res.write('{"partial":');
        setTimeout(() => s.socket.destroy(), 5);
      }
      // '/never': no answer at all
    });
    const c = client(url, 150);
    await expect(c.POST('/never', { body: {} })).rejects.toMatchObject({ name: 'TimeoutError', code: 'ETIMEDOUT' });
    await expect(c.POST('/cut', { body: {} })).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(c.open).toBe(0);
  });

  it('refuses a header value with a line break instead of writing it', async () => {
    const { url, seen } = await httpServer((_s, res) => res.end('{}'));
    const c = client(url);
    await expect(c.POST('/x', { body: {}, headers: { 'idempotency-key': 'a\r\nX-Evil: 1' } })).rejects.toMatchObject({ code: 'ERR_INVALID_CHAR' });
    expect(seen).toHaveLength(0);
  });

  it('parses status lines, folded repeated headers and chunked bodies with extensions and trailers', () => {
    const head = parseHead('HTTP/1.1 402 Payment Required\r\nContent-Type: application/json\r\nSet-Cookie: a=1\r\nset-cookie: b=2');
    expect(head.status).toBe(402);
    expect(head.headers.get('set-cookie')).toBe('a=1, b=2');
    expect(() => parseHead('SSH-2.0-OpenSSH')).toThrow(/not an HTTP\/1.1 answer/);

    const body = Buffer.from('4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nTrailer: x\r\n\r\n');
    expect(decodeChunked(body)).toEqual({ body: Buffer.from('Wikipedia'), used: body.length });
    expect(decodeChunked(body.subarray(0, body.length - 2))).toBeNull();
    expect(decodeChunked(Buffer.from('4\r\nWi'))).toBeNull();
    expect(() => decodeChunked(Buffer.from('zz\r\n'))).toThrow(/bad chunk size/);
  });
});
