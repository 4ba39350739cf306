import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from './envelope.ts';
import { ApiError, ERRORS, type ErrorCode, type FieldError } from './errors.ts';

/**
 * Input PostgreSQL cannot take, refused before any handler sees it (issue 11: bad input never
 * gives a 5xx). Four guards, registered once for every route:
 *
 * - JSON bodies nested deeper than MAX_JSON_DEPTH are refused as malformed before they are
 *   parsed, so nothing downstream (validation, the idempotency fingerprint) recurses over them.
 * - Every string and object key in the parsed body, query string and path parameters is
 *   checked for code points PostgreSQL refuses in text and jsonb: U+0000 and lone UTF-16
 *   surrogates. One failing path per field, 422 `validation_failed`.
 * - A route that declares no body schema takes no body: only none or `{}`.
 * - A URL the router cannot decode (bad percent-encoding) or a path parameter past its length
 *   limit answers in the envelope like any other invalid parameter.
 */
export const MAX_JSON_DEPTH = 32;

/** NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

export function isStorableText(s: string): boolean {
  return !UNSTORABLE.test(s);
}

/** How deep arrays and objects nest in JSON text, stopping as soon as `limit` is passed. */
export function jsonNestingExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** Parsed input: arrays and objects of any prototype (the query parser's has none), never raw bytes. */
function isContainer(v: unknown): v is Record<string, unknown> | unknown[] {
  if (Array.isArray(v)) return true;
  return v !== null && typeof v === 'object' && !ArrayBuffer.isView(v) && !(v instanceof ArrayBuffer);
}

function printable(key: string): string {
  return key.replace(UNSTORABLE_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The paths of strings and keys PostgreSQL cannot store, walked without recursion. Parsed
 * objects and arrays only: raw bodies (a webhook's Buffer) are not walked.
 */
export function unstorablePaths(root: unknown, prefix: string, maxDepth = MAX_JSON_DEPTH * 2): FieldError[] {
  const found: FieldError[] = [];
  const stack: { value: unknown; path: string; depth: number; badKey?: true }[] = [{ value: root, path: prefix, depth: 0 }];
  while (stack.length > 0 && found.length < 20) {
    const { value, path, depth, badKey } = stack.pop()!;
    if (badKey) {
      found.push({ path, message: 'is a key with a NUL character or an unpaired UTF-16 surrogate, which cannot be stored' });
      continue;
    }
    if (typeof value === 'string') {
      if (!isStorableText(value)) found.push({ path: path || '(root)', message: 'contains a NUL character or an unpaired UTF-16 surrogate, which cannot be stored' });
      continue;
    }
    if (!isContainer(value)) continue;
    if (depth >= maxDepth) {
      found.push({ path: path || '(root)', message: `nests deeper than ${maxDepth} levels` });
      continue;
    }
    const entries: [string, unknown][] = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      const childPath = path ? `${path}.${printable(key)}` : printable(key);
      stack.push(isStorableText(key) ? { value: child, path: childPath, depth: depth + 1 } : { value: null, path: childPath, depth, badKey: true });
    }
  }
  return found;
}

function refuse(fields: FieldError[]): never {
  const summary = fields.map((f) => `${f.path}: ${f.message}`).join('; ');
  throw new ApiError('validation_failed', `The request is invalid: ${summary}`, { fields });
}

function checkStorable(req: FastifyRequest): void {
  const fields = [...unstorablePaths(req.params, 'params'), ...unstorablePaths(req.query, 'query'), ...unstorablePaths(req.body, '')];
  if (fields.length > 0) refuse(fields);
}

function isEmptyBody(body: unknown): boolean {
  return body === undefined || (isContainer(body) && !Array.isArray(body) && Object.keys(body).length === 0);
}

/** JSON parser (secure-json-parse, refusing __proto__ and constructor.prototype as Fastify's default does) with a depth bound. */
function registerJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (jsonNestingExceeds(text, MAX_JSON_DEPTH)) {
      done(new ApiError('malformed_json', `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`), undefined);
      return;
    }
    parse(req, text, done);
  });
}

/** Registers the JSON parser and the text check on `app` (the root: every route inherits them). */
export function registerInputGuards(app: FastifyInstance): void {
  registerJsonParser(app);
  app.addHook('preValidation', async (req) => checkStorable(req));
}

/** On a scope of JSON routes: a route with no body schema refuses any body but none or `{}`. */
export function refuseUndeclaredBodies(app: FastifyInstance): void {
  app.addHook('preValidation', async (req) => {
    if (req.routeOptions.schema?.body || isEmptyBody(req.body)) return;
    refuse([{ path: '(root)', message: 'this endpoint takes no request body: send none or {}' }]);
  });
}

/**
 * Fastify's `frameworkErrors`: what the router refuses before any route or hook runs. Both are an
 * invalid path parameter to the client, so 422 like a parameter that fails its schema.
 */
export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  const message =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path parameter is longer than any id (100 characters)'
    : err.code === 'FST_ERR_BAD_URL' ? 'the URL path is not valid percent-encoded UTF-8'
    : 'the URL cannot be routed';
  reply.code(422).send(errorBody('validation_failed', `The request is invalid: params: ${message}`, [{ path: 'params', message }]));
}

/**
 * HTTP that never reaches a route (Fastify's `clientErrorHandler`): headers or a URL over Node's
 * 16 KB limit answer 431, a request not received in time 408, anything unparseable 400 — all in
 * the error envelope, written straight to the socket (there is no request object yet), then closed.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const code: ErrorCode = err.code === 'HPE_HEADER_OVERFLOW' ? 'headers_too_large' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'malformed_request';
  const { status, message } = ERRORS[code];
  const body = JSON.stringify(errorBody(code, message));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
