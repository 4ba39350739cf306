import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { formatMajorAmount } from '../app/currency.ts';
import {
  type Answer,
  type Caller,
  CompanySettingsBody,
  EXTPAY_CARDS,
  type ExtpayEnv,
  ExtpaySandboxProvider,
  type ExtpaySandboxProviderOptions,
  FailRenewalBody,
  OpenDisputeBody,
  type PurchaseForm,
  SettleBody,
  SettleRefundBody,
  UpdateDisputeBody,
} from './extpay-provider.ts';
import { type ApiVersion, apiVersionOf, checkoutBody, isAnswer, listQuery } from './extpay-versions.ts';

export type ExtpaySandboxOptions = ExtpaySandboxProviderOptions;

const IdParams = z.object({ env: z.string(), id: z.string().min(1).max(100) });
const LedgerQuery = z.object({ company_id: z.string().min(1).max(100) }).strict();
const ResetBody = z.object({ company_id: z.string().min(1).max(100).optional() }).strict();

function badRequest(reply: FastifyReply, error: z.ZodError) {
  // The issue messages name fields, never echo values.
  return reply.code(400).send({ error: { type: 'invalid_request_error', code: 'parameter_invalid', message: error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ') } });
}

function send(reply: FastifyReply, a: Answer & { replayed?: boolean }) {
  if (a.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(a.status).send(a.body);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** JSON safe inside a <script> element. */
function scriptJson(v: unknown): string {
  return JSON.stringify(v).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:2rem auto;padding:0 1rem}label{display:block;margin:.6rem 0}input{display:block;width:100%;padding:.5rem;font:inherit;box-sizing:border-box}button{margin-top:1rem;width:100%;padding:.8rem;font:inherit;border-radius:.4rem;border:1px solid #555;background:#111;color:#fff}.error{background:#fde8e8;padding:.6rem;border-radius:.4rem}.ok{background:#e6f4ea;padding:.6rem;border-radius:.4rem}table{font-size:.85rem;border-collapse:collapse}td{padding:.1rem .4rem}</style>
</head><body>${body}</body></html>`;
}

const CARD_HINTS: [keyof typeof EXTPAY_CARDS, string][] = [
  ['paid', 'paid at once'],
  ['pending', 'money held until settled'],
  ['failed', 'declined'],
  ['fraudDenied', 'blocked by fraud checks'],
  ['offSessionDecline', 'paid; upsells on it decline'],
];

function firstString(v: unknown): string | undefined {
  if (Array.isArray(v)) return firstString(v[0]);
  return typeof v === 'string' ? v : undefined;
}

function formFields(body: unknown): Record<string, string> {
  if (!body || typeof body !== 'object') return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    const s = firstString(v);
    if (s !== undefined) out[k] = s;
  }
  return out;
}

/**
 * The embed loader. Mounts an iframe of the hosted page into every element with
 * `data-whop-checkout-plan-id` (Whop's attribute names, so a page can swap this script for Whop's own
 * loader), and on completion calls `window[data-whop-checkout-on-complete](planId, receiptId)`,
 * dispatches an `extpay:complete` event and, with no callback, goes to the return URL.
 */
const EMBED_JS = `(function () {
  'use strict';
  var script = document.currentScript;
  var base = script ? script.src.replace(/\\/embed\\.js(?:[?#].*)?$/, '') : '';
  var origin = base ? new URL(base).origin : '';
  function withParams(url, params) {
    var u = new URL(url, location.href);
    Object.keys(params).forEach(function (k) { u.searchParams.set(k, params[k]); });
    return u.toString();
  }
  function mount(el) {
    if (!el || el.getAttribute('data-extpay-mounted')) return;
    var d = el.dataset;
    var plan = d.whopCheckoutPlanId;
    if (!plan) return;
    el.setAttribute('data-extpay-mounted', '1');
    var env = d.whopCheckoutEnvironment === 'sandbox' ? 'sandbox' : 'production';
    var q = new URLSearchParams();
    q.set('embed', '1');
    if (d.whopCheckoutSession) q.set('session', d.whopCheckoutSession);
    if (d.whopCheckoutSetupFutureUsage) q.set('setup_future_usage', d.whopCheckoutSetupFutureUsage);
    if (d.whopCheckoutReturnUrl) q.set('return_url', d.whopCheckoutReturnUrl);
    if (d.whopCheckoutPrefillEmail) q.set('email', d.whopCheckoutPrefillEmail);
    if (d.whopCheckoutPrefillName) q.set('name', d.whopCheckoutPrefillName);
    var frame = document.createElement('iframe');
    frame.src = base + '/' + env + '/checkout/' + encodeURIComponent(plan) + '?' + q.toString();
    frame.title = 'Checkout';
    frame.style.width = '100%';
    frame.style.minHeight = '460px';
    frame.style.border = '0';
    el.appendChild(frame);
    window.addEventListener('message', function (ev) {
      if (ev.origin !== origin || ev.source !== frame.contentWindow) return;
      var m = ev.data;
      if (!m || m.source !== 'extpay-sandbox') return;
      if (m.type === 'complete') {
        var done = d.whopCheckoutOnComplete && window[d.whopCheckoutOnComplete];
        el.dispatchEvent(new CustomEvent('extpay:complete', { bubbles: true, detail: { plan_id: m.plan_id, receipt_id: m.receipt_id, status: m.status } }));
        if (typeof done === 'function') done(m.plan_id, m.receipt_id);
        else if (d.whopCheckoutReturnUrl) location.href = withParams(d.whopCheckoutReturnUrl, { status: 'success', payment_id: m.receipt_id });
      } else if (m.type === 'payment_error') {
        var onError = d.whopCheckoutOnPaymentError && window[d.whopCheckoutOnPaymentError];
        el.dispatchEvent(new CustomEvent('extpay:payment_error', { bubbles: true, detail: { message: m.message, code: m.code, receipt_id: m.receipt_id } }));
        if (typeof onError === 'function') onError({ message: m.message, code: m.code });
      }
    });
  }
  function scan() {
    var els = document.querySelectorAll('[data-whop-checkout-plan-id]');
    for (var i = 0; i < els.length; i++) mount(els[i]);
  }
  window.extpayCheckout = { mount: mount, scan: scan };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', scan);
  else scan();
})();
`;

/**
 * Whop's REST API v1 for two separate environments (`/extpay/{sandbox|production}/api/v1/…`), the
 * hosted purchase page (`/extpay/{env}/checkout/{plan_id}?session=ch_…`), the embed loader
 * (`/extpay/embed.js`) and the test controls (`/extpay/{env}/sandbox/…`). Mounted by
 * `src/sandbox/server.ts` under `/extpay`. Wire format: docs/sandbox.md.
 */
export const extpaySandbox: FastifyPluginAsync<ExtpaySandboxOptions> = async (app, opts) => {
  const provider = new ExtpaySandboxProvider(opts);
  app.addHook('preClose', async () => {
    provider.close();
  });

  // Scoped to this plugin: the hosted page posts a form.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  // Malformed JSON and the like answer in the provider's error shape, scoped to this plugin.
  app.setErrorHandler((err: { statusCode?: number; message?: string }, _req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) app.log.error(err);
    return reply
      .code(status)
      .send({ error: { type: status === 500 ? 'api_error' : 'invalid_request_error', code: status === 500 ? 'internal_error' : 'invalid_request', message: status === 500 ? 'Internal sandbox error.' : (err.message ?? 'Invalid request.') } });
  });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send({ error: { type: 'invalid_request_error', code: 'unknown_path', message: 'Unknown path.' } }));

  const envOf = (req: FastifyRequest, reply: FastifyReply): ExtpayEnv | null => {
    const env = (req.params as { env?: string }).env ?? '';
    if (ExtpaySandboxProvider.isEnv(env)) return env;
    void reply.code(404).send({ error: { type: 'invalid_request_error', code: 'unknown_environment', message: 'The environment is sandbox or production.' } });
    return null;
  };
  const hostedBase = (req: FastifyRequest, env: ExtpayEnv) => `${req.protocol}://${req.host}${app.prefix}/${env}`;
  const idempotencyKey = (req: FastifyRequest) => firstString(req.headers['idempotency-key']);

  /** Resolves the environment and the caller (401 otherwise), then runs the route. */
  const api = (run: (caller: Caller, req: FastifyRequest, env: ExtpayEnv, v: ApiVersion) => Answer | Promise<Answer>) => async (req: FastifyRequest, reply: FastifyReply) => {
    const env = envOf(req, reply);
    if (!env) return reply;
    const caller = provider.authenticate(env, req.headers.authorization);
    if ('status' in caller) return send(reply, caller);
    const v = apiVersionOf(req.headers['api-version-date']);
    if (isAnswer(v)) return send(reply, v);
    return send(reply, await run(caller, req, env, v));
  };
  /** A list's query in the provider's terms (`account_id` in dated versions), or the 400. */
  const listed = (v: ApiVersion, req: FastifyRequest, run: (q: Record<string, unknown>) => Answer | Promise<Answer>) => {
    const q = listQuery(v, req.query as Record<string, unknown>);
    return isAnswer(q) ? q : run(q);
  };
  const id = (req: FastifyRequest) => (req.params as { id: string }).id.slice(0, 100);
  const post = (caller: Caller, req: FastifyRequest, path: string, run: () => Answer) =>
    provider.idempotent(caller, idempotencyKey(req), { method: 'POST', path, body: req.body ?? {} }, run);

  // ---- the API (Whop v1 paths, relative to the environment's /api/v1) ----

  app.post(
    '/:env/api/v1/checkout_configurations',
    api((c, req, env, v) =>
      post(c, req, '/checkout_configurations', () => {
        const b = checkoutBody(v, req.body);
        return isAnswer(b) ? b : provider.createCheckout(c, b.body, hostedBase(req, env));
      }),
    ),
  );
  app.get('/:env/api/v1/checkout_configurations/:id', api((c, req) => provider.retrieveCheckout(c, id(req))));
  app.get('/:env/api/v1/plans/:id', api((c, req, env) => provider.retrievePlan(c, id(req), hostedBase(req, env))));
  app.get('/:env/api/v1/payments', api((c, req, _env, v) => listed(v, req, (q) => provider.listPayments(c, q))));
  app.post('/:env/api/v1/payments', api((c, req) => post(c, req, '/payments', () => provider.chargeSavedMethod(c, req.body))));
  app.get('/:env/api/v1/payments/:id', api((c, req) => provider.retrievePayment(c, id(req))));
  app.post('/:env/api/v1/payments/:id/refund', api((c, req) => post(c, req, `/payments/${id(req)}/refund`, () => provider.refundPayment(c, id(req), req.body))));
  app.post('/:env/api/v1/payments/:id/void', api((c, req) => post(c, req, `/payments/${id(req)}/void`, () => provider.voidPayment(c, id(req)))));
  app.get('/:env/api/v1/refunds', api((c, req) => provider.listRefunds(c, req.query as Record<string, unknown>)));
  app.get('/:env/api/v1/refunds/:id', api((c, req) => provider.retrieveRefund(c, id(req))));
  app.get('/:env/api/v1/disputes/:id', api((c, req) => provider.retrieveDispute(c, id(req))));
  app.get('/:env/api/v1/payment_methods', api((c, req, _env, v) => listed(v, req, (q) => provider.listPaymentMethods(c, q))));
  app.get('/:env/api/v1/memberships/:id', api((c, req) => provider.retrieveMembership(c, id(req))));
  app.post('/:env/api/v1/memberships/:id/cancel', api((c, req) => provider.cancelMembership(c, id(req), req.body)));
  app.post('/:env/api/v1/memberships/:id/uncancel', api((c, req) => provider.uncancelMembership(c, id(req))));
  app.post('/:env/api/v1/memberships/:id/pause', api((c, req) => provider.setPaused(c, id(req), true, req.body)));
  app.post('/:env/api/v1/memberships/:id/resume', api((c, req) => provider.setPaused(c, id(req), false, req.body)));
  app.get(
    '/:env/api/v1/webhooks',
    api((c, req, _env, v) => listed(v, req, (q) => provider.listWebhooks(c, typeof q.company_id === 'string' ? q.company_id : undefined))),
  );
  app.post(
    '/:env/api/v1/webhooks/:id/test',
    api((c, req) => {
      const type = (req.body as { event_type?: unknown } | undefined)?.event_type;
      return provider.testWebhook(c, id(req), typeof type === 'string' ? type.slice(0, 100) : undefined);
    }),
  );

  // ---- the hosted purchase page and the embed loader ----

  app.get('/embed.js', async (_req, reply) =>
    reply.type('application/javascript; charset=utf-8').header('cache-control', 'no-store').header('access-control-allow-origin', '*').send(EMBED_JS),
  );

  const checkoutPage = (env: ExtpayEnv, planId: string, q: Record<string, string>, opts: { error?: string; paymentId?: string } = {}) => {
    const info = provider.hostedCheckout(env, planId, q.session || undefined);
    if (!info) return null;
    const cur = info.plan.currency;
    const amount = `${formatMajorAmount(info.chargeToday, cur)} ${cur}`;
    let terms = '';
    if (info.plan.planType === 'renewal')
      terms = ` then <strong>${escapeHtml(`${formatMajorAmount(info.plan.renewal, cur)} ${cur}`)}</strong> every ${info.plan.billingDays} days${info.plan.trialDays ? ` after a ${info.plan.trialDays}-day trial` : ''}`;
    const hidden = (name: string, value: string | undefined | null) => (value ? `<input type="hidden" name="${name}" value="${escapeHtml(value)}">` : '');
    const error = opts.error ? `<p class="error" id="error" role="alert"${opts.paymentId ? ` data-payment-id="${escapeHtml(opts.paymentId)}"` : ''}>${escapeHtml(opts.error)}</p>` : '';
    const cards = CARD_HINTS.map(([name, what]) => `<tr><td><code>${EXTPAY_CARDS[name]}</code></td><td>${escapeHtml(what)}</td></tr>`).join('');
    return page(
      `Checkout – ${info.companyTitle}`,
      `<h1>${escapeHtml(info.companyTitle)}</h1>
<p>${escapeHtml(info.plan.title ?? 'Your order')}: <strong>${escapeHtml(amount)}</strong> today${terms}.</p>
<p><small>${env === 'sandbox' ? 'Sandbox environment: no real money moves.' : 'Production environment (Checkstand sandbox stand-in).'}</small></p>
${error}
<form method="post" action="${app.prefix}/${env}/checkout/${encodeURIComponent(planId)}" id="checkout">
${hidden('session', info.session)}${hidden('setup_future_usage', q.setup_future_usage)}${hidden('return_url', q.return_url)}${hidden('embed', q.embed === '1' ? '1' : '')}
<label>Email <input name="email" type="email" autocomplete="email" required value="${escapeHtml(q.email ?? '')}"></label>
<label>Name <input name="name" autocomplete="name" value="${escapeHtml(q.name ?? '')}"></label>
<label>Card number <input name="card_number" inputmode="numeric" autocomplete="cc-number" required></label>
<button type="submit" id="pay">Pay ${escapeHtml(amount)}</button>
</form>
<details><summary>Test cards</summary><table>${cards}</table><p><small>Any other valid card number is paid.</small></p></details>`,
    );
  };

  app.get('/:env/checkout/:id', async (req, reply) => {
    const env = envOf(req, reply);
    if (!env) return reply;
    const q = formFields(req.query);
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-store');
    const html = checkoutPage(env, id(req), q);
    return html ? reply.send(html) : reply.code(404).send(page('Checkout not found', '<h1>Checkout not found</h1>'));
  });

  app.post('/:env/checkout/:id', async (req, reply) => {
    const env = envOf(req, reply);
    if (!env) return reply;
    const f = formFields(req.body);
    const planId = id(req);
    const form: PurchaseForm = { session: f.session, email: f.email, name: f.name, card_number: f.card_number, setup_future_usage: f.setup_future_usage, return_url: f.return_url };
    const result = provider.purchase(env, planId, form);
    const embed = f.embed === '1';
    const { card_number: _card, ...keep } = f;
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-store');
    if (result.kind === 'invalid') {
      const html = checkoutPage(env, planId, keep, { error: result.message });
      return reply.code(result.status).send(html ?? page('Checkout not found', '<h1>Checkout not found</h1>'));
    }
    if (embed) {
      const message =
        result.kind === 'completed'
          ? { source: 'extpay-sandbox', type: 'complete', plan_id: result.planId, receipt_id: result.paymentId, status: result.status }
          : { source: 'extpay-sandbox', type: 'payment_error', message: result.message, code: 'payment_failed', receipt_id: result.paymentId };
      const text = result.kind === 'completed' ? `<p class="ok">Payment ${result.status === 'paid' ? 'complete' : 'received, awaiting confirmation'}.</p>` : `<p class="error">${escapeHtml(result.message)}</p>`;
      return reply
        .code(result.kind === 'completed' ? 200 : 402)
        .send(
          page(
            'Checkout',
            `${text}<script type="application/json" id="extpay-result">${scriptJson(message)}</script><script>parent.postMessage(JSON.parse(document.getElementById('extpay-result').textContent), '*');</script>`,
          ),
        );
    }
    if (result.kind === 'failed') return reply.code(402).send(checkoutPage(env, planId, keep, { error: result.message, paymentId: result.paymentId }));
    const back = ExtpaySandboxProvider.returnTo(result);
    if (back) return reply.redirect(back, 303);
    return reply.send(
      page('Payment received', `<h1>Thank you</h1><p class="ok" id="receipt" data-payment-id="${escapeHtml(result.paymentId)}">Receipt ${escapeHtml(result.paymentId)} (${escapeHtml(result.status)}).</p>`),
    );
  });

  // ---- test controls (per environment, no authentication) ----

  const control = <T extends z.ZodTypeAny>(schema: T, run: (env: ExtpayEnv, id: string, body: z.infer<T>) => Answer | Promise<Answer>) => async (req: FastifyRequest, reply: FastifyReply) => {
    const env = envOf(req, reply);
    if (!env) return reply;
    const p = IdParams.safeParse(req.params);
    if (!p.success) return badRequest(reply, p.error);
    const b = schema.safeParse(req.body ?? {});
    if (!b.success) return badRequest(reply, b.error);
    return send(reply, await run(env, p.data.id, b.data));
  };

  app.post('/:env/sandbox/companies', async (req, reply) => {
    const env = envOf(req, reply);
    if (!env) return reply;
    const b = CompanySettingsBody.safeParse(req.body ?? {});
    if (!b.success) return badRequest(reply, b.error);
    return send(reply, provider.configureCompany(env, b.data));
  });
  app.post('/:env/sandbox/payments/:id/settle', control(SettleBody, (env, pid, b) => provider.settlePayment(env, pid, b.result)));
  app.post('/:env/sandbox/payments/:id/disputes', control(OpenDisputeBody, (env, pid, b) => provider.openDispute(env, pid, b)));
  app.post('/:env/sandbox/disputes/:id', control(UpdateDisputeBody, (env, did, b) => provider.updateDispute(env, did, b)));
  app.post('/:env/sandbox/refunds/:id/settle', control(SettleRefundBody, (env, rid, b) => provider.settleRefund(env, rid, b)));
  app.post('/:env/sandbox/memberships/:id/renew', control(z.object({}).strict(), (env, mid) => provider.renewMembership(env, mid)));
  app.post('/:env/sandbox/memberships/:id/fail_renewal', control(FailRenewalBody, (env, mid, b) => provider.failRenewal(env, mid, b.final)));
  app.post('/:env/sandbox/events/:id/redeliver', control(z.unknown(), (env, eid) => provider.redeliver(env, eid)));

  app.get('/:env/sandbox/ledger', async (req, reply) => {
    const env = envOf(req, reply);
    if (!env) return reply;
    const q = LedgerQuery.safeParse(req.query);
    if (!q.success) return badRequest(reply, q.error);
    return provider.ledger(env, q.data.company_id);
  });

  app.post('/:env/sandbox/reset', async (req, reply) => {
    const env = envOf(req, reply);
    if (!env) return reply;
    const b = ResetBody.safeParse(req.body ?? {});
    if (!b.success) return badRequest(reply, b.error);
    provider.reset(env, b.data.company_id);
    return { ok: true };
  });
};
