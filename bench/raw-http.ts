/**
 * `--client raw` (the default): the driver's API calls as HTTP/1.1 written on kept-alive TCP
 * sockets and their answers read off them, as load generators do (wrk, autocannon): the request's
 * head is one string made from a prefix built once, and the answer's status line, head and body
 * (Content-Length or chunked) are parsed here. node:http's client (`--client http`) costs the
 * driver's thread about 0.4–0.5 ms per request on this 2-core machine (ClientRequest, its agent,
 * the AbortSignal's timer, stream events), CPU that the server and PostgreSQL then do not have:
 * the driver only stands for the shoppers' browsers, which are other machines.
 *
 * The server sees the same requests (method, path, headers, JSON body) as from `--client http`.
 * One socket per request in flight; a socket goes back to the idle list once its answer is read
 * whole (unless the answer says `Connection: close`). A request's timeout is the socket's idle
 * timeout while it waits (an error named TimeoutError, as AbortSignal.timeout's); a socket that
 * closes or fails before the answer is whole rejects with the socket's error (or ECONNRESET).
 */
import net from 'node:net';
import { type PlainAnswer, plainAnswer, type PostOptions } from './plain-http.ts';

const CRLF_CRLF = Buffer.from('\r\n\r\n');

class RawHttpError extends Error {
  constructor(
    message: string,
    readonly code: string,
    name = 'Error',
  ) {
    super(message);
    this.name = name;
  }
}

interface Head {
  status: number;
  headers: Map<string, string>;
}

/** Parses an answer's status line and header lines (the bytes before the blank line). */
export function parseHead(text: string): Head {
  const lines = text.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  if (!m) throw new RawHttpError(`not an HTTP/1.1 answer: ${JSON.stringify((lines[0] ?? '').slice(0, 60))}`, 'HPE_INVALID_CONSTANT');
  const headers = new Map<string, string>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    const had = headers.get(name);
    headers.set(name, had === undefined ? value : `${had}, ${value}`);
  }
  return { status: Number(m[1]), headers };
}

/**
 * Decodes a chunked body from `buf`: the body and the bytes it took, or null while it is not whole.
 * Chunk extensions and trailers are skipped.
 */
export function decodeChunked(buf: Buffer): { body: Buffer; used: number } | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(buf.toString('latin1', at, eol).split(';')[0]!.trim(), 16);
    if (!Number.isFinite(size) || size < 0) throw new RawHttpError('bad chunk size in a chunked answer', 'HPE_INVALID_CHUNK_SIZE');
    at = eol + 2;
    if (size === 0) {
      // Trailers, if any, end with an empty line.
      for (;;) {
        const end = buf.indexOf('\r\n', at);
        if (end < 0) return null;
        const empty = end === at;
        at = end + 2;
        if (empty) return { body: Buffer.concat(parts), used: at };
      }
    }
    if (buf.length < at + size + 2) return null;
    parts.push(buf.subarray(at, at + size));
    at += size + 2;
  }
}

interface Pending {
  resolve: (a: PlainAnswer) => void;
  reject: (e: unknown) => void;
}

/** One kept-alive connection: one request at a time, its answer parsed as the bytes arrive. */
class Connection {
  private buf: Buffer = Buffer.alloc(0);
  private head: Head | null = null;
  private bodyStart = 0;
  private pending: Pending | null = null;
  private closed = false;

  constructor(
    readonly socket: net.Socket,
    private readonly timeoutMs: number,
    private readonly onIdle: (c: Connection) => void,
    private readonly onGone: (c: Connection) => void,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.data(chunk));
    socket.on('timeout', () => socket.destroy(new RawHttpError(`no answer within ${this.timeoutMs} ms`, 'ETIMEDOUT', 'TimeoutError')));
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new RawHttpError('socket hang up', 'ECONNRESET')));
  }

  send(request: string, pending: Pending): void {
    this.pending = pending;
    this.socket.setTimeout(this.timeoutMs);
    this.socket.write(request);
  }

  private fail(err: unknown): void {
    if (!this.closed) {
      this.closed = true;
      this.onGone(this);
    }
    const p = this.pending;
    this.pending = null;
    p?.reject(err);
  }

  private data(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    if (!this.pending) {
      this.socket.destroy(new RawHttpError('bytes from the server with no request waiting', 'HPE_UNEXPECTED'));
      return;
    }
    try {
      this.parse();
    } catch (err) {
      this.socket.destroy(err as Error);
    }
  }

  private parse(): void {
    if (!this.head) {
      const end = this.buf.indexOf(CRLF_CRLF);
      if (end < 0) return;
      this.head = parseHead(this.buf.toString('latin1', 0, end));
      this.bodyStart = end + 4;
    }
    const { headers, status } = this.head;
    let body: Buffer;
    let used: number;
    if ((headers.get('transfer-encoding') ?? '').toLowerCase().includes('chunked')) {
      const decoded = decodeChunked(this.buf.subarray(this.bodyStart));
      if (!decoded) return;
      body = decoded.body;
      used = this.bodyStart + decoded.used;
    } else {
      const length = Number(headers.get('content-length') ?? '0');
      if (this.buf.length < this.bodyStart + length) return;
      body = this.buf.subarray(this.bodyStart, this.bodyStart + length);
      used = this.bodyStart + length;
    }
    if (used !== this.buf.length) throw new RawHttpError('more bytes than the answer holds', 'HPE_UNEXPECTED');
    const p = this.pending!;
    this.pending = null;
    this.head = null;
    this.buf = Buffer.alloc(0);
    this.socket.setTimeout(0);
    if ((headers.get('connection') ?? '').toLowerCase() === 'close') {
      this.closed = true;
      this.onGone(this);
      this.socket.end();
    } else this.onIdle(this);
    p.resolve(plainAnswer(status, headers.get('content-type'), body.toString('utf8')));
  }
}

export function rawApi(
  baseUrl: string,
  token: string,
  timeoutMs: number,
): { POST(path: string, opts: PostOptions): Promise<PlainAnswer>; close(): void; readonly open: number } {
  const base = new URL(baseUrl);
  if (base.protocol !== 'http:') throw new Error(`--client raw speaks plain HTTP only, not ${base.protocol}`);
  const host = base.hostname.replace(/^\[|\]$/g, '');
  const port = Number(base.port || 80);
  const fixed = `Host: ${base.host}\r\nContent-Type: application/json\r\nAccept: application/json\r\nAuthorization: Bearer ${token}\r\n`;
  const idle: Connection[] = [];
  const all = new Set<Connection>();
  const gone = (c: Connection) => {
    all.delete(c);
    const i = idle.indexOf(c);
    if (i >= 0) idle.splice(i, 1);
  };
  return {
    POST(path, opts) {
      const payload = JSON.stringify(opts.body);
      let head = `POST ${path} HTTP/1.1\r\n${fixed}Content-Length: ${Buffer.byteLength(payload)}\r\n`;
      for (const [k, v] of Object.entries(opts.headers ?? {})) {
        if (/[\r\n]/.test(k) || /[\r\n]/.test(v)) return Promise.reject(new RawHttpError(`header ${k} holds a line break`, 'ERR_INVALID_CHAR'));
        head += `${k}: ${v}\r\n`;
      }
      const request = `${head}\r\n${payload}`;
      return new Promise<PlainAnswer>((resolve, reject) => {
        // A closed connection has already left the idle list (gone()).
        let conn = idle.pop();
        if (!conn) {
          const socket = net.connect({ host, port });
          conn = new Connection(socket, timeoutMs, (c) => idle.push(c), gone);
          all.add(conn);
        }
        conn.send(request, { resolve, reject });
      });
    },
    close() {
      for (const c of all) c.socket.destroy();
      all.clear();
      idle.length = 0;
    },
    get open() {
      return all.size;
    },
  };
}
