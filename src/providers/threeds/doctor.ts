import { z } from 'zod';
import type { GatewayAccount } from '../card-gateway.ts';
import type { DiagnoseContext, DoctorCheck } from '../provider.ts';
import { THREEDS_EVENT_TYPES, THREEDS_SIGNATURE_HEADER, signThreeDsWebhook } from './webhook.ts';

/**
 * The 3-D Secure gateway doctor (spec §2.8): the API key authenticates; its mode (`sk_test_` is test)
 * matches the record's test mode; a risk SDK key is saved (the checkout page needs it on every card
 * payment); the gateway's webhook points at this install and sends the kinds acted on (read through
 * `GET /v1/webhook_endpoints` where the gateway has it); a signed test delivery verifies with the
 * saved secret (`POST /v1/webhook_endpoints/test`, else signed here), with the clock skew it shows.
 * Reads and one test delivery only.
 */
const pass = (name: string, message: string, details?: Record<string, unknown>): DoctorCheck => ({ name, status: 'pass', message, fix: null, ...(details ? { details } : {}) });
const warn = (name: string, message: string, fix: string, details?: Record<string, unknown>): DoctorCheck => ({ name, status: 'warn', message, fix, ...(details ? { details } : {}) });
const fail = (name: string, message: string, fix: string, details?: Record<string, unknown>): DoctorCheck => ({ name, status: 'fail', message, fix, ...(details ? { details } : {}) });

const Endpoints = z.object({ data: z.array(z.object({ url: z.string(), enabled: z.boolean().nullish(), events: z.array(z.string()).nullish() })) });
const TestDelivery = z.object({ signed_at: z.number().nullish(), status_code: z.number().nullish(), response_body: z.string().nullish() });

type Answer = { status: number; json: unknown } | { status: null; error: string };

async function call(account: GatewayAccount, method: 'GET' | 'POST', path: string, fetchImpl: typeof fetch): Promise<Answer> {
  try {
    const res = await fetchImpl(account.baseUrl.replace(/\/+$/, '') + path, {
      method,
      headers: { authorization: `Bearer ${account.credentials.api_key ?? ''}`, accept: 'application/json', ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
      ...(method === 'POST' ? { body: '{}' } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    return { status: res.status, json };
  } catch (e) {
    const code = (e as { cause?: { code?: unknown } }).cause?.code;
    return { status: null, error: typeof code === 'string' ? code : 'network error' };
  }
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

function receiverCheck(status: number | null | undefined, body: string | null | undefined, url: string, provider: boolean): DoctorCheck {
  const text = body ?? '';
  if (status !== null && status !== undefined && status >= 200 && status < 300)
    return provider
      ? pass('webhook_round_trip', 'A test delivery signed by the gateway reached this install and verified with the saved secret.')
      : warn('webhook_round_trip', "A test event signed here with the saved secret reached this install's receiver; the gateway has no test-delivery API, so whether it signs with the same secret is not proven.", "Send a test from the gateway's dashboard.");
  if (/signature mismatch/i.test(text)) return fail('webhook_round_trip', 'This install could not verify the signature with the saved webhook secret: the gateway signs with another.', "Copy the webhook secret from the gateway's dashboard into the gateway's credentials (webhook_secret).");
  if (/timestamp out of range/i.test(text)) return fail('webhook_round_trip', "This install refused the delivery's timestamp: the clocks disagree by more than five minutes.", 'Fix the clock (see clock_skew).');
  if (status === null || status === undefined) return fail('webhook_round_trip', `The delivery to ${url} got no answer.`, `Make sure ${url} reaches this install (PUBLIC_BASE_URL, proxies, firewalls).`);
  return fail('webhook_round_trip', `${url} answered HTTP ${status}.`, `Make sure ${url} reaches this install and belongs to this gateway.`);
}

export async function diagnoseThreeDs(account: GatewayAccount, ctx: DiagnoseContext, opts: { fetch?: typeof fetch } = {}): Promise<DoctorCheck[]> {
  const fetchImpl = opts.fetch ?? fetch;
  const checks: DoctorCheck[] = [];
  const key = account.credentials.api_key ?? '';
  const keyIsTest = key.startsWith('sk_test_');

  checks.push(
    keyIsTest === ctx.testMode
      ? pass('key_mode', `The API key is a ${keyIsTest ? 'test (sk_test_)' : 'live'} key and the gateway is in ${ctx.testMode ? 'test' : 'live'} mode.`)
      : fail(
          'key_mode',
          `The API key is a ${keyIsTest ? 'test (sk_test_)' : 'live'} key but the gateway is in ${ctx.testMode ? 'test' : 'live'} mode.`,
          ctx.testMode ? 'Use the sk_test_ key from the gateway dashboard, or turn test mode off for live payments.' : 'Use the live key, or turn test mode on: a test key never moves real money.',
        ),
  );
  const risk = account.credentials.risk_sdk_key ?? '';
  if (!risk) checks.push(fail('risk_sdk_key', 'No risk SDK key is saved: the checkout page cannot start the risk session every card payment needs.', "Copy the publishable risk SDK key (pk_…) from the gateway's dashboard into the gateway's credentials (risk_sdk_key)."));
  else if ((risk.startsWith('pk_test_') && !ctx.testMode) || (risk.startsWith('pk_live_') && ctx.testMode))
    checks.push(warn('risk_sdk_key', `The risk SDK key is a ${risk.startsWith('pk_test_') ? 'test' : 'live'} key and the gateway is in ${ctx.testMode ? 'test' : 'live'} mode.`, 'Use the risk SDK key of the same mode as the API key.'));
  else checks.push(pass('risk_sdk_key', 'A risk SDK key is saved.'));

  const auth = await call(account, 'GET', '/v1/payments?reference=doctor_probe', fetchImpl);
  if (auth.status === null) {
    checks.push(fail('key_authenticates', `Could not reach the gateway at ${account.baseUrl} (${auth.error}).`, "Check the gateway's base URL and that this server can reach it."));
    return checks;
  }
  if (auth.status === 401 || auth.status === 403) {
    checks.push(fail('key_authenticates', 'The gateway refused the API key.', "Copy the secret API key from the gateway's dashboard (sk_test_… in test mode)."));
    for (const name of ['webhook_url', 'webhook_round_trip', 'clock_skew']) checks.push(warn(name, 'Not checked: the key does not authenticate.', 'Fix the key first.'));
    return checks;
  }
  checks.push(pass('key_authenticates', 'The gateway accepted the API key.'));

  const listed = await call(account, 'GET', '/v1/webhook_endpoints', fetchImpl);
  const endpoints = listed.status === 200 ? Endpoints.safeParse(listed.json) : null;
  let providerTest = false;
  if (!endpoints?.success) {
    checks.push(warn('webhook_url', "The gateway's webhook settings cannot be read through its API.", `In the gateway's dashboard, set the webhook URL to ${ctx.webhookUrl} with ${THREEDS_EVENT_TYPES.join(', ')}.`, { expected: ctx.webhookUrl }));
  } else {
    const mine = endpoints.data.data.find((e) => sameUrl(e.url, ctx.webhookUrl));
    if (!mine) {
      const seen = endpoints.data.data.map((e) => e.url);
      checks.push(fail('webhook_url', seen.length ? `The gateway's webhook points at ${seen.join(', ')}, not at this install.` : 'The gateway has no webhook URL.', `In the gateway's dashboard, set the webhook URL to ${ctx.webhookUrl}.`, { expected: ctx.webhookUrl, found: seen }));
    } else {
      const absent = THREEDS_EVENT_TYPES.filter((t) => !(mine.events ?? THREEDS_EVENT_TYPES).includes(t));
      checks.push(
        absent.length
          ? fail('webhook_url', `The webhook points at this install but does not send ${absent.join(', ')}.`, `Subscribe it to ${absent.join(', ')}.`, { missing: absent })
          : pass('webhook_url', `The gateway's webhook points at this install (${ctx.webhookUrl}).`),
      );
      providerTest = true;
    }
  }

  const secret = account.credentials.webhook_secret ?? '';
  if (!secret) {
    checks.push(fail('webhook_round_trip', 'No webhook secret is saved: the gateway\'s webhooks are refused (403).', "Copy the webhook secret from the gateway's dashboard into the gateway's credentials (webhook_secret)."));
    checks.push(warn('clock_skew', 'Not measured: no test delivery could be verified.', 'Save the webhook secret first.'));
    return checks;
  }
  if (providerTest) {
    const sent = await call(account, 'POST', '/v1/webhook_endpoints/test', fetchImpl);
    const d = sent.status === 200 ? TestDelivery.safeParse(sent.json) : null;
    if (d?.success) {
      checks.push(receiverCheck(d.data.status_code, d.data.response_body, ctx.webhookUrl, true));
      if (typeof d.data.signed_at === 'number') {
        const skew = d.data.signed_at - Math.floor(Date.now() / 1000);
        const text = `The gateway's clock is ${Math.abs(skew)} s ${skew >= 0 ? 'ahead of' : 'behind'} this server's.`;
        checks.push(Math.abs(skew) > 300 ? fail('clock_skew', text, "Set this server's clock by NTP.", { skew_seconds: skew }) : Math.abs(skew) > 30 ? warn('clock_skew', text, "Set this server's clock by NTP.", { skew_seconds: skew }) : pass('clock_skew', text, { skew_seconds: skew }));
      } else checks.push(warn('clock_skew', 'Not measured: the gateway did not say when it signed.', 'Keep this server on NTP.'));
      return checks;
    }
  }
  const body = JSON.stringify({ id: `evt_doctor_${Date.now()}`, type: 'WEBHOOK_TEST', created: Math.floor(Date.now() / 1000), data: {} });
  let status: number | null = null;
  let text = '';
  try {
    const res = await fetchImpl(ctx.webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json', [THREEDS_SIGNATURE_HEADER]: signThreeDsWebhook(secret, body) }, body, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
    status = res.status;
    text = await res.text();
  } catch {
    status = null;
  }
  checks.push(receiverCheck(status, text, ctx.webhookUrl, false));
  checks.push(warn('clock_skew', "Not measured: only the gateway's own deliveries carry its clock.", 'Keep this server on NTP.'));
  return checks;
}
