import type { DiagnoseContext, DoctorCheck } from '../provider.ts';
import { signExtpayWebhook, EXTPAY_EVENT_TYPES } from './webhook.ts';
import { EXTPAY_CHECKOUT_PERMISSIONS, EXTPAY_INTEGRATION_PERMISSIONS, WHOP_API_BASE_URLS, type ExtpayConnection, type ExtpayEnvironment, type ExtpayProbe, type ExtpayProviderAdapter, accountScoped } from './types.ts';
import { missingPermissionsOf } from './wire.ts';
import { z } from 'zod';

/**
 * The extpay connection doctor: named checks a merchant can act on when confirmations never arrive.
 * Every call is a read, or a request the provider refuses before acting on it (a probe body it
 * cannot accept, an id that does not exist), plus one test delivery of a webhook. Order of the
 * answer: key, environment, API version, company, permissions, webhook URL, webhook kinds, the signed
 * round trip, clock skew.
 */

/** Beyond this the receiver refuses deliveries (spec §5.4's five minutes); beyond WARN it is worth fixing. */
const SKEW_FAIL_SECONDS = 300;
const SKEW_WARN_SECONDS = 30;
const PROBE = 'doctor_probe';

const pass = (name: string, message: string, details?: Record<string, unknown>): DoctorCheck => ({ name, status: 'pass', message, fix: null, ...(details ? { details } : {}) });
const warn = (name: string, message: string, fix: string, details?: Record<string, unknown>): DoctorCheck => ({ name, status: 'warn', message, fix, ...(details ? { details } : {}) });
const fail = (name: string, message: string, fix: string, details?: Record<string, unknown>): DoctorCheck => ({ name, status: 'fail', message, fix, ...(details ? { details } : {}) });

const WireHook = z.object({ id: z.string(), url: z.string(), enabled: z.boolean().nullish(), events: z.array(z.string()).nullish() });
const WireHooks = z.object({ data: z.array(WireHook) });
const WireTestDelivery = z.object({
  event_id: z.string().nullish(),
  webhook_timestamp: z.number().nullish(),
  status_code: z.number().nullish(),
  response_body: z.string().nullish(),
  error: z.string().nullish(),
});

const otherEnv = (env: ExtpayEnvironment): ExtpayEnvironment => (env === 'sandbox' ? 'production' : 'sandbox');

/** The other environment's API base, when the connection's base is one we know the twin of (Whop's, or the sandbox's). */
export function otherEnvironmentBase(conn: ExtpayConnection): string | null {
  const base = conn.baseUrl.replace(/\/+$/, '');
  if (base === WHOP_API_BASE_URLS[conn.environment]) return WHOP_API_BASE_URLS[otherEnv(conn.environment)];
  const m = /^(.*\/extpay\/)(sandbox|production)(\/api\/v1)$/.exec(base);
  return m ? `${m[1]}${otherEnv(m[2] as ExtpayEnvironment)}${m[3]}` : null;
}

const sameUrl = (a: string, b: string) => {
  try {
    const x = new URL(a);
    const y = new URL(b);
    return x.origin === y.origin && x.pathname.replace(/\/+$/, '') === y.pathname.replace(/\/+$/, '');
  } catch {
    return false;
  }
};

const httpStatus = (r: ExtpayProbe) => (r.ok ? r.status : r.error.httpStatus);
const providerCode = (r: ExtpayProbe) => (r.ok ? null : r.error.providerCode);
const unreachable = (r: ExtpayProbe) => !r.ok && r.error.httpStatus === null;

/** What a receiver's answer to the test delivery says. */
function readReceiver(statusCode: number | null | undefined, body: string | null | undefined, error: string | null | undefined, url: string): { ok: true } | { ok: false; why: 'secret' | 'clock' | 'no_secret' | 'no_connection' | 'unreachable' | 'other'; text: string } {
  if (statusCode === null || statusCode === undefined) return { ok: false, why: 'unreachable', text: `The delivery to ${url} got no answer${error ? ` (${error})` : ''}.` };
  if (statusCode >= 200 && statusCode < 300) return { ok: true };
  const text = (body ?? '').slice(0, 500);
  if (/signature mismatch/i.test(text)) return { ok: false, why: 'secret', text: 'This install could not verify the signature with the saved webhook secret.' };
  if (/timestamp out of range/i.test(text)) return { ok: false, why: 'clock', text: "This install refused the delivery's timestamp: the clocks disagree by more than five minutes." };
  if (/webhook_secret_missing/.test(text)) return { ok: false, why: 'no_secret', text: 'This install has no webhook secret saved for the connection.' };
  if (statusCode === 404) return { ok: false, why: 'no_connection', text: `${url} answered 404: no connection of this install matched the delivery (its company), or the URL is not this install's.` };
  return { ok: false, why: 'other', text: `${url} answered HTTP ${statusCode}.` };
}

/**
 * A test delivery the receiver answered 2xx: it verified with the saved secret of SOME connection of
 * the delivery's company. It passes only if this connection verified and recorded it; otherwise another
 * connection of the same company (another team's, or a twin) took it, and this one's secret is wrong.
 */
async function verifiedHere(conn: ExtpayConnection, ctx: DiagnoseContext, eventId: string | null, signer: 'provider' | 'here', dashboard: string): Promise<DoctorCheck> {
  const secretFix = `Paste the secret of this ${conn.environment} webhook (${conn.environment === 'sandbox' ? 'ws_…' : 'whsec_…'}) from ${dashboard} into this connection.`;
  if (eventId && ctx.recordedDelivery && !(await ctx.recordedDelivery(eventId)))
    return fail(
      'webhook_round_trip',
      `The test delivery was accepted by this install, but verified with the secret of another connection of company ${conn.companyId}, not with this connection's saved secret: this connection's deliveries are not verified with it.`,
      secretFix,
      { event_id: eventId },
    );
  const confirmed = Boolean(eventId && ctx.recordedDelivery);
  if (signer === 'here')
    return warn(
      'webhook_round_trip',
      "A test event signed here with the saved secret reached this install's receiver; the provider has no test-delivery API, so whether it signs with the same secret is not proven.",
      `Send a test from ${dashboard} → Webhooks and watch for it in the log.`,
    );
  return confirmed
    ? pass('webhook_round_trip', 'A test delivery signed by the provider reached this install and verified with the saved secret.', { event_id: eventId })
    : warn('webhook_round_trip', "A test delivery signed by the provider reached this install and was accepted, but the provider did not name the event, so which connection's secret verified it is not known.", secretFix);
}

export async function diagnoseExtpay(adapter: ExtpayProviderAdapter, conn: ExtpayConnection, ctx: DiagnoseContext, opts: { fetch?: typeof fetch } = {}): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  const env = conn.environment;
  const acct = accountScoped(conn) ? 'account_id' : 'company_id';
  const q = (extra: Record<string, string> = {}) => new URLSearchParams({ [acct]: conn.companyId, ...extra });
  const dashboard = env === 'sandbox' ? 'sandbox.whop.com/dashboard/developer' : 'whop.com/dashboard/developer';

  // ---- the key, its environment, the API version, the company
  const read = await adapter.probe(conn, 'GET', `/payments?${q({ first: '1' })}`);
  if (unreachable(read)) {
    const why = read.ok ? '' : read.error.message;
    checks.push(fail('key_authenticates', `Could not reach the provider at ${conn.baseUrl}: ${why}`, 'Check the connection\'s base URL and that this server can reach it; then run the doctor again.'));
    return checks;
  }
  const keyRefused = httpStatus(read) === 401;
  const versionRefused = providerCode(read) === 'api_version_invalid';
  checks.push(
    keyRefused
      ? fail('key_authenticates', 'The provider refused the API key.', `Copy a company API key from ${dashboard} (Developer → API keys) and save it on the connection.`)
      : pass('key_authenticates', 'The provider accepted the API key.'),
  );

  if (keyRefused) {
    const twin = otherEnvironmentBase(conn);
    const there = twin ? await adapter.probe({ ...conn, baseUrl: twin }, 'GET', `/payments?${q({ first: '1' })}`) : null;
    if (there && !unreachable(there) && httpStatus(there) !== 401)
      checks.push(fail('environment', `The key belongs to the ${otherEnv(env)} environment, and the connection is ${env}.`, `Sandbox and production are separate accounts: use a key from ${dashboard}, or make a ${otherEnv(env)} connection for this key.`));
    else if (twin) checks.push(warn('environment', `The key is not known in either environment.`, 'The key was revoked or mistyped: create a new one.'));
    else checks.push(warn('environment', 'Not checked: the key does not authenticate and the base URL is not one whose other environment is known.', 'Fix the key first.'));
  } else checks.push(pass('environment', `The key belongs to the ${env} environment.`));

  checks.push(
    versionRefused
      ? fail('api_version', `The provider does not know the pinned Api-Version-Date (${conn.apiVersionDate ?? 'default'}): ${read.ok ? '' : read.error.message}`, 'Clear the connection\'s api_version_date (the release\'s default) or pin a version the provider lists.')
      : pass('api_version', `The provider accepts Api-Version-Date ${conn.apiVersionDate ?? 'of this release'}.`),
  );

  if (keyRefused) {
    for (const name of ['company_matches_key', 'permissions', 'webhook_url', 'webhook_events', 'webhook_round_trip', 'clock_skew'])
      checks.push(warn(name, 'Not checked: the key does not authenticate.', 'Fix the key first, then run the doctor again.'));
    return checks;
  }
  const companyRefused = providerCode(read) === 'company_forbidden' || (httpStatus(read) === 403 && missingPermissionsOf(read.ok ? '' : read.error.message).length === 0);
  // A refused version refuses every probe before the company or a permission is looked at: nothing below was checked.
  const notChecked = versionRefused ? `Not checked: the provider refused the pinned Api-Version-Date (${conn.apiVersionDate ?? 'default'}) before looking at it.` : null;
  const fixVersionFirst = 'Fix api_version first, then run the doctor again.';
  checks.push(
    notChecked
      ? warn('company_matches_key', notChecked, fixVersionFirst)
      : companyRefused
        ? fail('company_matches_key', `The key does not belong to company ${conn.companyId}.`, `Copy the company ID (biz_…) shown next to the key in ${dashboard}, or use that company's key.`)
        : pass('company_matches_key', `The key belongs to company ${conn.companyId}.`),
  );

  // ---- permissions: each probe is refused (403, naming what is missing) or passes the permission check and stops at validation or a missing id
  const probes: Array<{ needs: readonly string[]; call: () => Promise<ExtpayProbe> }> = [
    { needs: EXTPAY_CHECKOUT_PERMISSIONS, call: () => adapter.probe(conn, 'POST', '/checkout_configurations', accountScoped(conn) ? { company_id: conn.companyId, plan: {} } : { plan: { company_id: conn.companyId } }) },
    { needs: ['payment:basic:read'], call: async () => read },
    { needs: ['plan:basic:read'], call: () => adapter.probe(conn, 'GET', `/plans/plan_${PROBE}`) },
    { needs: ['payment:charge'], call: () => adapter.probe(conn, 'POST', '/payments', { company_id: conn.companyId }) },
    { needs: ['payment:manage'], call: () => adapter.probe(conn, 'POST', `/payments/pay_${PROBE}/void`, {}) },
    { needs: ['payment:dispute:read'], call: () => adapter.probe(conn, 'GET', `/disputes/dspt_${PROBE}`) },
    { needs: ['member:basic:read'], call: () => adapter.probe(conn, 'GET', `/memberships/mem_${PROBE}`) },
    { needs: ['member:manage'], call: () => adapter.probe(conn, 'POST', `/memberships/mem_${PROBE}/uncancel`, {}) },
    { needs: ['member:payment_methods:read'], call: () => adapter.probe(conn, 'GET', `/payment_methods?${q({ member_id: `mber_${PROBE}` })}`) },
    { needs: ['developer:manage_webhook'], call: () => adapter.probe(conn, 'GET', `/webhooks?${q()}`) },
  ];
  const answers = await Promise.all(probes.map((p) => p.call()));
  const missing = new Set<string>();
  answers.forEach((r, i) => {
    if (httpStatus(r) !== 403 || providerCode(r) === 'company_forbidden') return;
    const named = missingPermissionsOf(r.ok ? '' : r.error.message);
    for (const p of named.length > 0 ? named : probes[i]!.needs) missing.add(p);
  });
  const uses = Object.entries(EXTPAY_INTEGRATION_PERMISSIONS)
    .filter(([, perms]) => perms.some((p) => missing.has(p)))
    .map(([what]) => what);
  // developer:manage_webhook serves the doctor alone: without it payments still work, so it only warns.
  const payments = [...missing].filter((p) => p !== 'developer:manage_webhook');
  const lacks = `The key lacks ${[...missing].join(', ')} (needed to ${uses.join('; ')}).`;
  const grant = `In ${dashboard}, edit the key and grant ${[...missing].join(', ')}.`;
  checks.push(
    notChecked
      ? warn('permissions', notChecked, fixVersionFirst)
      : payments.length > 0
        ? fail('permissions', lacks, grant, { missing: [...missing] })
        : missing.size > 0
          ? warn('permissions', lacks, grant, { missing: [...missing] })
          : pass('permissions', 'The key has every permission the integration uses.', { checked: [...new Set(Object.values(EXTPAY_INTEGRATION_PERMISSIONS).flat())] }),
  );

  // ---- the provider's webhook: where it points, what it subscribes to
  const hooksAnswer = answers.at(-1)!;
  const hooks = hooksAnswer.ok ? WireHooks.safeParse(hooksAnswer.json) : null;
  const ours = hooks?.success ? hooks.data.data.filter((h) => sameUrl(h.url, ctx.webhookUrl)) : [];
  const hook = ours.find((h) => h.enabled !== false) ?? ours[0] ?? null;
  if (!hooks?.success) {
    const why = hooksAnswer.ok ? 'an answer it could not read' : hooksAnswer.error.message;
    checks.push(warn('webhook_url', `Could not read the provider's webhooks (${why}).`, `Grant the key developer:manage_webhook, or check by hand that the webhook in ${dashboard} points at ${ctx.webhookUrl}.`, { expected: ctx.webhookUrl }));
    checks.push(warn('webhook_events', 'Not checked: the webhooks could not be read.', `Check by hand that the webhook subscribes to ${EXTPAY_EVENT_TYPES.join(', ')}.`));
  } else if (!hook) {
    const seen = hooks.data.data.map((h) => h.url);
    checks.push(
      fail('webhook_url', seen.length ? `The provider's webhook points at ${seen.join(', ')}, not at this install.` : 'The company has no webhook.', `In ${dashboard} → Webhooks, set the URL to ${ctx.webhookUrl} (API version v1).`, { expected: ctx.webhookUrl, found: seen }),
    );
    checks.push(warn('webhook_events', 'Not checked: no webhook points at this install.', 'Fix the webhook URL first.'));
  } else {
    checks.push(
      hook.enabled === false
        ? fail('webhook_url', `The webhook pointing at ${ctx.webhookUrl} is disabled.`, `Enable webhook ${hook.id} in ${dashboard}.`, { webhook_id: hook.id })
        : pass('webhook_url', `The provider's webhook ${hook.id} points at this install (${ctx.webhookUrl}).`, { webhook_id: hook.id }),
    );
    const absent = EXTPAY_EVENT_TYPES.filter((t) => !(hook.events ?? []).includes(t));
    checks.push(
      absent.length > 0
        ? fail('webhook_events', `The webhook does not subscribe to ${absent.join(', ')}.`, `Edit webhook ${hook.id} and tick ${absent.join(', ')} (all eleven are needed; payment.authorized is optional).`, { missing: absent })
        : pass('webhook_events', `The webhook subscribes to all ${EXTPAY_EVENT_TYPES.length} kinds the integration needs.`),
    );
  }

  // ---- a signed delivery through this install's receiver, and the clocks
  if (!conn.webhookSecret) {
    checks.push(fail('webhook_round_trip', 'No webhook secret is saved on the connection: every confirmation is refused.', `Copy the webhook's secret (ws_… in sandbox, whsec_… in production) from ${dashboard} into the connection.`));
    checks.push(warn('clock_skew', 'Not measured: no test delivery could be verified.', 'Save the webhook secret first.'));
    return checks;
  }
  const sent = hook ? await adapter.probe(conn, 'POST', `/webhooks/${encodeURIComponent(hook.id)}/test`, { event_type: 'webhook.test' }) : null;
  const delivery = sent?.ok ? WireTestDelivery.safeParse(sent.json) : null;
  if (delivery?.success) {
    const d = delivery.data;
    const skew = typeof d.webhook_timestamp === 'number' ? d.webhook_timestamp - Math.floor(Date.now() / 1000) : null;
    const answer = readReceiver(d.status_code, d.response_body, d.error, ctx.webhookUrl);
    if (answer.ok) checks.push(await verifiedHere(conn, ctx, d.event_id ?? null, 'provider', dashboard));
    else if (answer.why === 'secret')
      checks.push(fail('webhook_round_trip', `${answer.text} The provider signs with another secret.`, `Paste the secret of this ${env} webhook (${env === 'sandbox' ? 'ws_…' : 'whsec_…'}) from ${dashboard}; a secret from the other environment, or from another webhook, never verifies.`));
    else if (answer.why === 'clock') checks.push(fail('webhook_round_trip', answer.text, 'Fix the clock (see clock_skew).'));
    else checks.push(fail('webhook_round_trip', answer.text, `Make sure ${ctx.webhookUrl} reaches this install (PUBLIC_BASE_URL, proxies, firewalls) and that the connection's company is ${conn.companyId}.`));
    if (skew === null) checks.push(warn('clock_skew', 'Not measured: the provider did not say when it signed.', 'Keep this server on NTP.'));
    else {
      const abs = Math.abs(skew);
      const details = { skew_seconds: skew };
      const text = `The provider's clock is ${abs} s ${skew >= 0 ? 'ahead of' : 'behind'} this server's.`;
      if (abs > SKEW_FAIL_SECONDS) checks.push(fail('clock_skew', `${text} Deliveries more than ${SKEW_FAIL_SECONDS} s off are refused.`, "Set this server's clock by NTP (timedatectl set-ntp true); the provider's clock is authoritative.", details));
      else if (abs > SKEW_WARN_SECONDS) checks.push(warn('clock_skew', `${text} Deliveries are still accepted, up to ${SKEW_FAIL_SECONDS} s.`, "Set this server's clock by NTP.", details));
      else checks.push(pass('clock_skew', text, details));
    }
    return checks;
  }

  // No test-delivery API (Whop documents none) or no webhook of ours: sign a test event here with the
  // saved secret. That proves the URL reaches this install's receiver, not that the provider signs with it.
  const fetchImpl = opts.fetch ?? fetch;
  const id = `msg_doctor_${Date.now()}`;
  const ts = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ id, api_version: 'v1', timestamp: new Date(ts * 1000).toISOString(), type: 'webhook.test', company_id: conn.companyId, data: { test: true } });
  let status: number | null = null;
  let text = '';
  let err: string | null = null;
  try {
    const res = await fetchImpl(ctx.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signExtpayWebhook(conn.webhookSecret, id, ts, body) },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(10_000),
    });
    status = res.status;
    text = await res.text();
  } catch (e) {
    err = (e as { cause?: { code?: string } }).cause?.code ?? String((e as Error).message).slice(0, 200);
  }
  const answer = readReceiver(status, text, err, ctx.webhookUrl);
  checks.push(
    answer.ok
      ? await verifiedHere(conn, ctx, id, 'here', dashboard)
      : fail('webhook_round_trip', answer.text, `Make sure ${ctx.webhookUrl} reaches this install (PUBLIC_BASE_URL, proxies, firewalls).`),
  );
  checks.push(warn('clock_skew', "Not measured: only the provider's own deliveries carry its clock.", 'Keep this server on NTP.'));
  return checks;
}

