/**
 * What every operation of the OpenAPI document says besides its own schemas, added once here
 * instead of in each route file: an `operationId` (the route's own, or one derived from its method
 * and path), the error answers every route can give (401, 403, 422, 429, 500, 503, plus 400/413/415
 * for bodies, 404 for path parameters, 409/422 for Idempotency-Key on POST) in the error envelope,
 * and, for the document as a whole, servers, license and contact, and only the components it uses.
 *
 * A route names the catalogue codes of its own error answers in `schema.errors` (e.g.
 * `['order_not_payable', 'payment_in_progress']`): each adds its status, in the error envelope,
 * unless the route documents that status with a schema of its own, and the response's description
 * lists the codes the status can carry.
 */
import type { RouteOptions } from 'fastify';
import { jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { EnvelopeError } from './envelope.ts';
import { ERRORS, type ErrorCode } from './errors.ts';

declare module 'fastify' {
  interface FastifySchema {
    /** Catalogue codes this route answers besides the ones every route can give (see openapi-responses.ts). */
    errors?: readonly DocumentedCode[];
  }
}

/** GET /healthz and GET /readyz (not in the error envelope: load balancers read `status`). */
export const Health = z.object({ status: z.literal('ok') });
export const Readiness = z.object({
  status: z.enum(['ready', 'migrations_pending', 'database_unreachable']),
  database: z.enum(['postgres', 'pglite']).optional(),
  pending: z.array(z.string()).optional().describe('`migrations_pending`: the migrations not applied yet'),
});

/** A provider doctor's answer (POST /v1/gateways/{id}/doctor, POST /v1/extpay-connections/{id}/doctor). */
export const DoctorReport = z
  .object({
    object: z.literal('doctor_report'),
    status: z.enum(['pass', 'warn', 'fail']).describe('The worst of the checks'),
    checks: z.array(
      z.object({
        name: z.string(),
        status: z.enum(['pass', 'warn', 'fail']),
        message: z.string(),
        fix: z.string().nullable().describe('What to do; null when the check passed'),
        details: z.record(z.string(), z.unknown()).optional().describe('What the check measured or found (missing permissions, clock skew, the URL seen)'),
      }),
    ),
    checked_at: z.string(),
  })
  .meta({ id: 'DoctorReport' });

/** Where the codes of each error status travel from onRoute to the finished document. */
const CODES_KEY = 'x-error-codes';

const AUTH: ErrorCode[] = ['unauthenticated', 'token_revoked', 'token_expired', 'permission_denied'];
const EVERY_ROUTE: ErrorCode[] = ['validation_failed', 'rate_limited', 'internal', 'overloaded', 'database_unavailable'];
/** Every write: a body that cannot be read, and a change that conflicts with what is stored (a `sku` already used, a state that forbids it). */
const WITH_BODY: ErrorCode[] = ['malformed_json', 'body_too_large', 'unsupported_media_type', 'conflict'];
const IDEMPOTENT_POST: ErrorCode[] = ['idempotency_in_flight', 'idempotency_key_reused'];

/** Answers that are not in the catalogue but come in the error envelope all the same (refund and void refusals, Capture's 422). */
const EXTRA_CODES = {
  refund_declined: { status: 422, description: 'the gateway refused the refund' },
  void_declined: { status: 422, description: 'the gateway refused the void' },
  payment_not_completed: { status: 422, description: 'the redirected payment was declined, failed or abandoned' },
} as const satisfies Record<string, { status: number; description: string }>;

/** A code a route may name in `schema.errors`. */
export type DocumentedCode = ErrorCode | keyof typeof EXTRA_CODES;
const extra = (code: string) => (EXTRA_CODES as Record<string, { status: number; description: string } | undefined>)[code];

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  400: 'Bad request',
  401: 'Unauthenticated',
  402: 'Payment declined',
  403: 'Forbidden',
  404: 'Not found',
  408: 'Request timeout',
  409: 'Conflict',
  413: 'Body too large',
  415: 'Unsupported media type',
  422: 'Invalid request',
  429: 'Rate limited',
  500: 'Internal error',
  502: 'Provider unavailable or outcome unknown',
  503: 'Unavailable: retry after Retry-After',
};

function statusOf(code: string): number {
  return code in ERRORS ? ERRORS[code as ErrorCode].status : (extra(code)?.status ?? 500);
}

const METHOD_VERB: Record<string, string> = { GET: 'get', POST: 'create', PATCH: 'update', PUT: 'set', DELETE: 'delete' };

function pascal(s: string): string {
  return s
    .split(/[-_]/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}

function singular(s: string): string {
  if (s.endsWith('ies')) return `${s.slice(0, -3)}y`;
  if (s.endsWith('ses')) return s.slice(0, -2);
  if (s.endsWith('s') && !s.endsWith('ss')) return s.slice(0, -1);
  return s;
}

/** Path segments that name an action on what precedes them (`POST /v1/subscriptions/:id/cancel`). */
const ACTIONS = new Set([
  'accept', 'activate', 'approve', 'cancel', 'capture', 'complete', 'confirm', 'deactivate', 'disable', 'enable', 'pause', 'preview',
  'reactivate', 'rebill', 'reject', 'replay', 'reprocess', 'reset', 'resume', 'retry', 'revoke', 'rotate', 'send', 'sync', 'test',
  'transfer', 'verify', 'void',
]);

const camel = (s: string) => s.replace(/^./, (c) => c.toLowerCase());

/**
 * The operationId a route gets unless it names its own (or OPERATION_IDS does): `listOrders` (GET of
 * a plural collection), `getOrder` (GET of an item or a singleton), `createOrderRefund`,
 * `updateCampaign`, `deleteGateway`, and for an action (`POST /v1/webhook-endpoints/:id/rotate-secret`)
 * the action and what it acts on (`rotateSecretWebhookEndpoint`).
 */
export function deriveOperationId(method: string, url: string): string {
  const segments = url.split('/').filter((s) => s && s !== 'v1' && s !== 'checkout');
  const nouns = segments.filter((s) => !s.startsWith(':'));
  const last = segments.at(-1) ?? '';
  const m = method.toUpperCase();
  const noun = (list: string[]) => list.map((n) => pascal(singular(n))).join('');
  if (m === 'POST' && nouns.length >= 2 && ACTIONS.has(last.split('-')[0]!)) return camel(pascal(last)) + noun(nouns.slice(0, -1));
  if (m === 'GET' && !last.startsWith(':') && last.endsWith('s')) return `list${noun(nouns.slice(0, -1))}${pascal(last)}`;
  return (METHOD_VERB[m] ?? m.toLowerCase()) + noun(nouns);
}

/** The codes a route can answer, by status. */
function errorCodesOf(route: RouteOptions, schema: Record<string, unknown>, api: boolean): Map<number, string[]> {
  const methods = (Array.isArray(route.method) ? route.method : [route.method]).map((m) => String(m).toUpperCase());
  const codes: string[] = [...EVERY_ROUTE];
  const isPublic = (route.config as { permission?: string } | undefined)?.permission === 'public' || (Array.isArray(schema.security) && schema.security.length === 0);
  if (api && !isPublic) codes.push(...AUTH);
  if (methods.some((m) => m !== 'GET' && m !== 'HEAD')) codes.push(...WITH_BODY);
  if (api && methods.includes('POST')) codes.push(...IDEMPOTENT_POST);
  if (route.url.includes('/:')) codes.push('not_found');
  codes.push(...((schema.errors as string[] | undefined) ?? []));
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const status = statusOf(code);
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) list.push(code);
    byStatus.set(status, list);
  }
  return byStatus;
}

/**
 * onRoute (from declarePermission): the operationId and the error answers of a documented route.
 * Hidden routes (docs, /openapi.json) are left alone.
 */
export function documentResponses(route: RouteOptions, api: boolean): void {
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  if (schema.hide) return;
  const method = Array.isArray(route.method) ? String(route.method[0]) : String(route.method);
  if (method === 'HEAD') return;
  schema.operationId ??= OPERATION_IDS[`${method} ${route.url}`] ?? deriveOperationId(method, route.url);
  const response = { ...((schema.response ?? {}) as Record<string, unknown>) };
  if (Object.keys(response).length === 0) return void (route.schema = schema); // undocumented answers: the lint names them
  const documented: Record<string, string[]> = {};
  for (const [status, codes] of errorCodesOf(route, schema, api)) {
    response[status] ??= EnvelopeError;
    documented[status] = codes;
  }
  delete schema.errors;
  schema.response = response;
  schema[CODES_KEY] = documented;
  route.schema = schema;
}

/**
 * Operations whose derived id would read badly (the funnel's endpoints are named after the spec's
 * operations). Keys are `METHOD url` as Fastify registers them.
 */
const OPERATION_IDS: Record<string, string> = {
  'GET /healthz': 'getHealth',
  'GET /readyz': 'getReadiness',
  'POST /checkout/leads': 'createLead',
  'POST /checkout/orders': 'createOrder',
  'POST /checkout/orders/payment': 'processPayment',
  'POST /checkout/orders/capture': 'capturePayment',
  'POST /checkout/orders/complete': 'completeOrder',
  'POST /checkout/orders/reprocess': 'reprocessPayment',
  'POST /checkout/orders/upsell': 'processUpsell',
  'POST /v1/orders/:order_number/refunds': 'refundOrder',
  'POST /v1/orders/:order_number/void': 'voidOrder',
  'POST /v1/subscriptions/:id/payment-method': 'replaceSubscriptionPaymentMethod',
  'POST /v1/subscriptions/:id/rebill': 'rebillSubscription',
  'GET /v1/mail': 'listMail',
  'GET /v1/audit-log': 'listAuditLog',
  'GET /v1/bin-blacklist': 'listBinBlacklistEntries',
  'POST /v1/bin-blacklist': 'createBinBlacklistEntry',
  'DELETE /v1/bin-blacklist/:id': 'deleteBinBlacklistEntry',
  'POST /v1/campaigns/:id/purchase-email/preview': 'previewCampaignPurchaseEmail',
  'PUT /v1/campaigns/:id/purchase-email': 'setCampaignPurchaseEmail',
  'POST /v1/sessions': 'login',
  'DELETE /v1/session': 'logout',
  'POST /v1/session/team': 'switchSessionTeam',
  'POST /v1/session/totp': 'enrollTotp',
  'DELETE /v1/session/totp': 'disableTotp',
  'POST /v1/session/totp/confirm': 'confirmTotp',
  'POST /v1/members/:id/transfer-ownership': 'transferOwnership',
};

type Doc = Record<string, any>;

const REF = /"\$ref":"#\/components\/schemas\/([^"]+)"/g;

/** Drops the component schemas no operation reaches (zod writes an input and an output variant of each), and names an input-only `XInput` plain `X`. */
function pruneComponents(doc: Doc): void {
  const schemas: Record<string, unknown> = doc.components?.schemas ?? {};
  const reached = new Set<string>();
  const queue = [...JSON.stringify(doc.paths).matchAll(REF)].map((m) => decodeURIComponent(m[1]!));
  while (queue.length > 0) {
    const name = queue.pop()!;
    if (reached.has(name) || !(name in schemas)) continue;
    reached.add(name);
    for (const m of JSON.stringify(schemas[name]).matchAll(REF)) queue.push(decodeURIComponent(m[1]!));
  }
  const kept: Record<string, unknown> = {};
  for (const name of Object.keys(schemas).sort()) if (reached.has(name)) kept[name] = schemas[name];
  const renames = new Map<string, string>();
  for (const name of Object.keys(kept)) {
    const plain = name.replace(/Input$/, '');
    if (plain !== name && !(plain in kept)) renames.set(name, plain);
  }
  let text = JSON.stringify({ paths: doc.paths, schemas: kept });
  for (const [from, to] of renames) text = text.split(`"#/components/schemas/${from}"`).join(`"#/components/schemas/${to}"`);
  const out = JSON.parse(text) as { paths: Doc; schemas: Record<string, unknown> };
  const renamed: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(out.schemas)) renamed[renames.get(name) ?? name] = s;
  doc.paths = out.paths;
  doc.components.schemas = Object.fromEntries(Object.entries(renamed).sort(([a], [b]) => a.localeCompare(b)));
}

/** Each error response's description: the status and the codes it carries. */
function describeErrors(doc: Doc): void {
  for (const ops of Object.values(doc.paths as Doc)) {
    for (const op of Object.values(ops as Doc) as Doc[]) {
      const codes = (op[CODES_KEY] ?? {}) as Record<string, string[]>;
      delete op[CODES_KEY];
      for (const [status, res] of Object.entries((op.responses ?? {}) as Record<string, Doc>)) {
        const list = codes[status];
        if (!list || (res.description && res.description !== 'Default Response')) continue;
        const text = STATUS_TEXT[Number(status)] ?? `HTTP ${status}`;
        res.description = `${text}: ${list.map((c) => `\`${c}\`${extra(c) ? ` (${extra(c)!.description})` : ''}`).join(', ')}`;
      }
      for (const [status, res] of Object.entries((op.responses ?? {}) as Record<string, Doc>)) {
        if (res.description === 'Default Response') res.description = STATUS_TEXT[Number(status)] ?? `HTTP ${status}`;
      }
    }
  }
}

export interface DocumentOptions {
  servers: { url: string; description?: string }[];
}

/** @fastify/swagger's transformObject: zod's components, then servers, license, contact, error descriptions, unused components dropped. */
export function openapiTransformObject(opts: DocumentOptions) {
  return (input: Parameters<typeof jsonSchemaTransformObject>[0]) => {
    const doc = jsonSchemaTransformObject(input) as Doc;
    doc.servers = opts.servers;
    doc.info = {
      ...doc.info,
      contact: { name: 'Checkstand maintainers' },
      license: { name: 'UNLICENSED', identifier: 'LicenseRef-Proprietary' },
    };
    describeErrors(doc);
    pruneComponents(doc);
    return doc as ReturnType<typeof jsonSchemaTransformObject>;
  };
}
