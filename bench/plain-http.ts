/**
 * `--client http` (the default until raw-http.ts): the driver's API calls over node:http with a keep-alive agent,
 * JSON in and out, in the shape the typed client's `api.POST` answers (`data` on 2xx, `error`
 * otherwise, and the status). The typed client (`--client sdk`: openapi-fetch over fetch) costs the
 * driver's thread several times more per request (Request and Response objects, web streams,
 * middleware), CPU this 2-core machine then does not have for the server and the database.
 */
import http from 'node:http';

export interface PlainAnswer {
  data?: unknown;
  error?: unknown;
  response: { status: number };
}

export interface PostOptions {
  body: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/**
 * An answer in the typed client's shape: its text parsed as JSON when the content type says so
 * (and it parses), as `data` on a 2xx and `error` otherwise. Shared by both plain clients.
 */
export function plainAnswer(status: number, contentType: string | undefined, text: string): PlainAnswer {
  let body: unknown = text;
  if ((contentType ?? '').includes('json') && text) {
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON after all: the text is the body
    }
  }
  return status >= 200 && status < 300 ? { data: body, response: { status } } : { error: body, response: { status } };
}

export function plainApi(baseUrl: string, token: string): { POST(path: string, opts: PostOptions): Promise<PlainAnswer> } {
  const base = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true });
  const fixed = { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` };
  return {
    POST(path, opts) {
      return new Promise<PlainAnswer>((resolve, reject) => {
        const payload = Buffer.from(JSON.stringify(opts.body));
        const req = http.request(
          {
            host: base.hostname,
            port: base.port,
            path,
            method: 'POST',
            agent,
            headers: { ...fixed, 'content-length': payload.length, ...opts.headers },
            ...(opts.signal ? { signal: opts.signal } : {}),
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('error', reject);
            res.on('end', () => resolve(plainAnswer(res.statusCode ?? 0, res.headers['content-type'], Buffer.concat(chunks).toString('utf8'))));
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    },
  };
}
