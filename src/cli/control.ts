/**
 * The local control socket: how `checkstand token …` reaches a running `start`/`serve` on the
 * embedded database, whose data dir only one process may open.
 *
 * A unix-domain socket in the data dir (`control.sock`), created with mode 0600: only the user
 * the server runs as (and root) can connect, exactly who could read the database files anyway.
 * Nothing listens on the network, so no token can be minted by anyone the file system would not
 * already let in. HTTP/1.1 on the socket (node:http on both ends), JSON in and out:
 *
 *   GET  /info                      { pid, url, data_dir }
 *   POST /tokens                    { team_id, name }        → 201 token view + `token` (the secret, once)
 *   GET  /tokens[?team_id=…]        → token views
 *   POST /tokens/{id}/revoke        → token view
 *   POST /tokens/{id}/rotate        { grace_seconds }        → token view + `token` + `replaced`
 *
 * This module's client half imports only node built-ins, so a CLI command that talks to the
 * socket never loads the app.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

export const CONTROL_SOCKET = 'control.sock';

/** The longest path a unix socket may have on Linux (108 bytes with the terminating NUL); macOS allows 104. */
const MAX_SOCKET_PATH = 100;

export function controlSocketPath(dataDir: string): string {
  return path.join(dataDir, CONTROL_SOCKET);
}

export interface ServerInfo {
  pid: number;
  url: string;
  data_dir: string;
}

/** What the socket's handlers do: the CLI's token commands, run by the process that holds the database. */
export interface ControlHandlers {
  info(): ServerInfo;
  createToken(teamId: string, name: string): Promise<object>;
  listTokens(teamId: string | undefined): Promise<object[]>;
  revokeToken(id: string): Promise<object>;
  rotateToken(id: string, graceSeconds: number): Promise<object>;
}

export interface ControlServer {
  path: string;
  close(): Promise<void>;
}

class ControlRequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  let body = '';
  for await (const chunk of req) {
    body += String(chunk);
    if (body.length > 16_384) throw new ControlRequestError(413, 'request too large');
  }
  if (body === '') return {};
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new ControlRequestError(400, 'the body must be a JSON object');
}

function str(body: Record<string, unknown>, key: string): string {
  const v = body[key];
  if (typeof v !== 'string' || v === '') throw new ControlRequestError(400, `${key} is required`);
  return v;
}

async function route(h: ControlHandlers, req: http.IncomingMessage): Promise<[number, unknown]> {
  const url = new URL(req.url ?? '/', 'http://control');
  const parts = url.pathname.split('/').filter(Boolean);
  if (req.method === 'GET' && url.pathname === '/info') return [200, h.info()];
  if (parts[0] === 'tokens') {
    if (parts.length === 1 && req.method === 'GET') return [200, await h.listTokens(url.searchParams.get('team_id') ?? undefined)];
    if (parts.length === 1 && req.method === 'POST') {
      const body = await readJson(req);
      return [201, await h.createToken(str(body, 'team_id'), typeof body.name === 'string' && body.name ? body.name : 'default')];
    }
    if (parts.length === 3 && req.method === 'POST' && parts[2] === 'revoke') return [200, await h.revokeToken(parts[1]!)];
    if (parts.length === 3 && req.method === 'POST' && parts[2] === 'rotate') {
      const body = await readJson(req);
      const grace = body.grace_seconds ?? 3600;
      if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0) throw new ControlRequestError(400, 'grace_seconds must be a non-negative integer');
      return [200, await h.rotateToken(parts[1]!, grace)];
    }
  }
  throw new ControlRequestError(404, `no such control request: ${req.method} ${url.pathname}`);
}

/**
 * Listens on `<dataDir>/control.sock` (mode 0600). A socket file left by a process that died is
 * replaced: the caller holds the data dir's lock, so no live server can own it. Undefined (and a
 * reason) when the path is too long for a unix socket.
 */
export async function startControlServer(dataDir: string, h: ControlHandlers): Promise<ControlServer | { skipped: string }> {
  const file = controlSocketPath(dataDir);
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH) return { skipped: `the data dir's path is too long for a unix socket (${file})` };
  fs.rmSync(file, { force: true });
  const server = http.createServer((req, res) => {
    route(h, req).then(
      ([status, body]) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
      (err: unknown) => {
        const e = err as { status?: number; message?: string };
        const status = err instanceof ControlRequestError ? err.status : typeof e.status === 'number' && e.status >= 400 && e.status < 500 ? e.status : 500;
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: e.message ?? String(err) }));
      },
    );
  });
  // The socket is created by listen() with the process umask: owner-only from the start, not chmod-ed after.
  const umask = process.umask(0o077);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(file, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    process.umask(umask);
  }
  fs.chmodSync(file, 0o600);
  return {
    path: file,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        fs.rmSync(file, { force: true });
      }),
  };
}

/** The running server's answer, or undefined when no server listens on the data dir's socket (none, or a stale file). */
export async function controlRequest<T>(dataDir: string, method: 'GET' | 'POST', pathname: string, body?: unknown): Promise<{ status: number; body: T } | undefined> {
  const socketPath = controlSocketPath(dataDir);
  if (!fs.existsSync(socketPath)) return undefined;
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      { socketPath, method, path: pathname, headers: payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}, timeout: 30_000 },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as T });
          } catch {
            reject(new Error(`the running server answered on ${socketPath} with something that is not JSON`));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`the running server did not answer on ${socketPath} within 30 s`)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      // A socket file nobody listens on: the server that made it is gone.
      if (err.code === 'ECONNREFUSED' || err.code === 'ENOENT') resolve(undefined);
      else if (err.code === 'EACCES') reject(new Error(`${socketPath} belongs to another user: run this command as the user running the server`));
      else reject(err);
    });
    req.end(payload);
  });
}
