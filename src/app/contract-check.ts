/**
 * The contract check (on in the test suite only: test/support/harness.ts sets
 * CHECKSTAND_CONTRACT_CHECK=1): every JSON answer of a documented route is validated against the
 * OpenAPI document the server publishes (/openapi.json), for the route and the status it answers.
 * A status the route does not document, a body its schema refuses, or a field the response schema
 * silently dropped on the way out (zod strips keys it does not know) is logged and thrown: the test
 * sees a 500, so the document cannot drift from the server.
 */
import { isDeepStrictEqual } from 'node:util';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

export const CONTRACT_CHECK_ENV = 'CHECKSTAND_CONTRACT_CHECK';

export function contractCheckEnabled(): boolean {
  return process.env[CONTRACT_CHECK_ENV] === '1';
}

export class ContractViolation extends Error {
  override readonly name = 'ContractViolation';
}

type Doc = { paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>>; components?: unknown };

interface Checker {
  ajv: Ajv2020;
  doc: Doc;
  compiled: Map<string, ValidateFunction | null>;
}

const checkers = new WeakMap<object, Checker>();
const RAW = Symbol('contract.raw');
/** Set once a request failed the check: the 500 sent instead is not checked again (no loop). */
const FAILED = Symbol('contract.failed');

function checkerFor(app: FastifyInstance): Checker {
  const doc = (app as unknown as { swagger(): Doc }).swagger();
  let c = checkers.get(doc);
  if (!c) {
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema({ $id: 'openapi', components: doc.components }, 'openapi');
    c = { ajv, doc, compiled: new Map() };
    checkers.set(doc, c);
  }
  return c;
}

function openapiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** The validator of one route's answer with one status; undefined when the status is not documented, null when it has no JSON body. */
function validatorFor(c: Checker, method: string, url: string, status: number): ValidateFunction | null | undefined {
  const key = `${method} ${url} ${status}`;
  if (c.compiled.has(key)) return c.compiled.get(key);
  const op = c.doc.paths[openapiPath(url)]?.[method.toLowerCase()];
  if (!op) return null; // not in the document (hidden): nothing to hold it to
  const res = op.responses?.[String(status)] ?? op.responses?.[`${String(status)[0]}XX`] ?? op.responses?.default;
  if (!res) return undefined;
  const schema = res.content?.['application/json']?.schema;
  let fn: ValidateFunction | null = null;
  if (schema) {
    const rebased = JSON.parse(JSON.stringify(schema).split('"#/components/').join('"openapi#/components/')) as object;
    fn = c.ajv.compile(rebased);
  }
  c.compiled.set(key, fn);
  return fn;
}

/** Paths of `raw` (what the handler answered) that `sent` (what went out) lacks. */
function dropped(raw: unknown, sent: unknown, path = ''): string[] {
  if (Array.isArray(raw) && Array.isArray(sent)) return raw.flatMap((r, i) => dropped(r, sent[i], `${path}[${i}]`));
  if (raw && typeof raw === 'object' && sent && typeof sent === 'object' && !Array.isArray(raw)) {
    const s = sent as Record<string, unknown>;
    return Object.entries(raw as Record<string, unknown>).flatMap(([k, v]) => {
      const p = path ? `${path}.${k}` : k;
      if (v === undefined) return [];
      if (!(k in s)) return [p];
      return dropped(v, s[k], p);
    });
  }
  return [];
}

function fail(req: FastifyRequest, reply: FastifyReply, problem: string, detail: unknown): never {
  const where = `${req.method} ${req.routeOptions.url} → ${reply.statusCode}`;
  req.log.error({ contract: { route: where, problem, detail } }, 'contract violation');
  console.error(`contract violation: ${where}: ${problem}\n${JSON.stringify(detail, null, 2).slice(0, 4000)}`);
  (req as unknown as Record<symbol, unknown>)[FAILED] = true;
  // A 500 whatever answered: after the error handler already ran (an error answer failed), Fastify's
  // fallback keeps the reply's status, which would hide the violation from a test checking only it.
  reply.code(500);
  throw new ContractViolation(`${where}: ${problem}`);
}

async function rememberRaw(req: FastifyRequest, _reply: FastifyReply, payload: unknown) {
  (req as unknown as Record<symbol, unknown>)[RAW] = payload;
  return payload;
}

async function checkAnswer(this: FastifyInstance, req: FastifyRequest, reply: FastifyReply, payload: unknown) {
  if ((reply.statusCode >= 300 && reply.statusCode < 400) || (req as unknown as Record<symbol, unknown>)[FAILED]) return payload;
  const url = req.routeOptions.url;
  if (!url) return payload;
  const c = checkerFor(this);
  const validate = validatorFor(c, req.method, url, reply.statusCode);
  if (validate === undefined) fail(req, reply, `status ${reply.statusCode} is not documented for this route`, { body: String(payload).slice(0, 2000) });
  if (validate === null) return payload;
  const type = String(reply.getHeader('content-type') ?? '');
  if (!type.includes('json') || (typeof payload !== 'string' && !Buffer.isBuffer(payload))) return payload;
  const body = JSON.parse(String(payload)) as unknown;
  if (!validate(body)) fail(req, reply, 'the body does not match the documented schema', { errors: validate.errors, body });
  const raw = (req as unknown as Record<symbol, unknown>)[RAW];
  if (raw !== undefined && typeof raw === 'object' && raw !== null) {
    const plain = JSON.parse(JSON.stringify(raw)) as unknown;
    if (!isDeepStrictEqual(plain, body)) {
      const lost = dropped(plain, body);
      if (lost.length > 0) fail(req, reply, `the response schema dropped fields the handler answered (document them): ${lost.slice(0, 20).join(', ')}`, { lost });
    }
  }
  return payload;
}

/** onRoute: the route validates its own answers (added last, after the route's other onSend hooks). */
export function attachContractCheck(route: RouteOptions): void {
  if ((route.schema as { hide?: boolean } | undefined)?.hide) return;
  const asList = <T>(h: T | T[] | undefined): T[] => (h === undefined ? [] : Array.isArray(h) ? h : [h]);
  route.preSerialization = [...asList(route.preSerialization), rememberRaw] as RouteOptions['preSerialization'];
  route.onSend = [...asList(route.onSend), checkAnswer] as RouteOptions['onSend'];
}
