/**
 * The scenario's provider on the sandbox (the NMI gateway, the extpay provider, the 3-D Secure
 * gateway): set up for the run, its ledger read back for the checks, and the report's words for
 * each scenario's funnel.
 */
import type { Runtime } from '../src/app/runtime.ts';
import type { DemoSeed } from '../src/app/seed.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { THREEDS_CARDS } from '../src/sandbox/threeds-gateway.ts';
import { benchCardExp, type Endpoint, type Scenario } from './stats.ts';

/** Capture answered 202: asked again at most this many times (backing off from 100 ms to 2 s: ≈ 10 s in all). */
export const CAPTURE_RETRIES = 8;

/** The step whose expected answer means the first payment went through, per scenario. */
export const FIRST_CHARGE: Record<Scenario, Endpoint> = {
  card: 'POST /checkout/orders/payment',
  extpay: 'sandbox: extpay pay page',
  threeds: 'sandbox: 3DS challenge',
};

/** What the sandbox's ledger of the scenario's provider says, in the terms of the checks. */
export interface LedgerRead {
  /** Charges that went through: NMI approved sales, extpay `paid` payments, 3-D Secure `succeeded` ones. */
  approved: number;
  chargedMinor: number;
  entries: number;
  /** Payments not settled either way: extpay `pending`, 3-D Secure awaiting authentication or processing. */
  unsettled: number;
  /** The provider's webhooks to the API (extpay, threeds); null for the NMI gateway, which sends none. */
  events: Array<{ type: string; delivered: boolean }> | null;
}

export interface ProviderSetup {
  /** For the report: which provider on the sandbox. */
  label: string;
  /** The gateway's or connection's id. */
  id: string;
  /** Which column of `transactions` names it. */
  column: 'gateway_id' | 'connection_id';
  readLedger(): Promise<LedgerRead>;
}

async function getJson(url: string): Promise<any> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url.replace(/\?.*$/, '')} answered ${res.status}`);
  return res.json();
}

/**
 * The scenario's provider, read back from the demo seed (its credentials, to read the sandbox's
 * ledger afterwards). extpay and threeds: the sandbox is told again where to send the provider's
 * signed webhooks, now that the API listens (seedDemo ran before, with port 0 in the config).
 */
export async function setUpProvider(rt: Runtime, seed: DemoSeed, scenario: Scenario, sandboxUrl: string, apiUrl: string): Promise<ProviderSetup> {
  const { gateways, connections } = rt.ctx.services;
  const post = async (url: string, body: unknown) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`POST ${url} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    await res.arrayBuffer();
  };
  if (scenario === 'extpay') {
    const id = seed.extpay_connection_id;
    const row = id ? await rt.ctx.store.run((db) => connections.findLive(db, seed.team_id, id)) : undefined;
    if (!id || !row) throw new Error('seedDemo created no extpay connection');
    const conn = connections.connection(row);
    const root = /^(.*\/extpay\/sandbox)\/api\/v1\/?$/.exec(row.base_url)?.[1];
    if (!root) throw new Error(`the demo extpay connection is not on the sandbox: ${row.base_url}`);
    // As configureExtpaySandboxCompany (src/app/seed.ts) does, with the API's real address.
    await post(`${root}/sandbox/companies`, {
      company_id: conn.companyId,
      api_keys: [{ key: conn.apiKey }],
      webhook_url: `${apiUrl}/webhooks/extpay`,
      webhook_secret: conn.webhookSecret,
    });
    return {
      label: 'extpay connection (sandbox provider)',
      id,
      column: 'connection_id',
      readLedger: async () => {
        const l = await getJson(`${root}/sandbox/ledger?company_id=${encodeURIComponent(conn.companyId)}`);
        return {
          approved: l.summary.paid,
          chargedMinor: Math.round(Number(l.summary.charged) * 100),
          entries: l.payments.length,
          unsettled: l.summary.pending,
          events: l.events,
        };
      },
    };
  }
  if (scenario === 'threeds') {
    const id = seed.threeds_gateway_id;
    const row = id ? await rt.ctx.store.run((db) => gateways.findGateway(db, seed.team_id, id)) : undefined;
    if (!id || !row) throw new Error('seedDemo created no 3-D Secure gateway');
    const credentials = gateways.account(row).credentials;
    if (!credentials.api_key) throw new Error('the demo 3-D Secure gateway has no api_key');
    const apiKey = credentials.api_key;
    // As configureThreeDsSandboxAccount (src/app/seed.ts) does, with the API's real address.
    await post(`${row.base_url}/sandbox/accounts`, { api_key: apiKey, webhook_url: `${apiUrl}/webhooks/gateways/${id}`, webhook_secret: credentials.webhook_secret });
    return {
      label: '3-D Secure gateway (sandbox)',
      id,
      column: 'gateway_id',
      readLedger: async () => {
        const l = await getJson(`${row.base_url}/sandbox/ledger?api_key=${encodeURIComponent(apiKey)}`);
        return { approved: l.summary.succeeded, chargedMinor: l.summary.charged_minor, entries: l.payments.length, unsettled: l.summary.requires_action + l.summary.processing, events: l.events };
      },
    };
  }
  const id = seed.gateway_id;
  const row = id ? await rt.ctx.store.run((db) => gateways.findGateway(db, seed.team_id, id)) : undefined;
  if (!id || !row) throw new Error('seedDemo created no card gateway');
  const securityKey = gateways.account(row).credentials.security_key;
  if (!securityKey) throw new Error('the demo gateway has no security_key');
  return {
    label: 'NMI gateway (sandbox)',
    id,
    column: 'gateway_id',
    readLedger: async () => {
      const l = await getJson(`${sandboxUrl}/sandbox/nmi/ledger?security_key=${encodeURIComponent(securityKey)}`);
      return { approved: l.summary.approved_sales, chargedMinor: l.summary.charged_minor, entries: l.transactions.length, unsettled: 0, events: null };
    },
  };
}

/** The report's description of each step of the scenario's funnel. */
export function flowLines(scenario: Scenario, upsellId: string): string[] {
  const upsell = `POST /checkout/orders/upsell (demo step-2 upsell ${upsellId}, quantity 1, saved`;
  const complete = 'POST /checkout/orders/complete (expects 200, status completed)';
  if (scenario === 'extpay')
    return [
      'POST /checkout/orders (new e-mail, serum offer, payment.method extpay pinned to the demo connection; expects 200 pending_redirect with checkout.purchase_url)',
      "sandbox: the provider's hosted page (GET it, POST its form, setup_future_usage off_session; expects 303 to the return URL with payment_id)",
      `POST /checkout/orders/capture (payment_id = the receipt; expects 200 captured or already captured by the provider's payment.succeeded webhook; 202 asked again up to ${CAPTURE_RETRIES} times)`,
      `${upsell} payment method at the provider; expects 202 accepted, the line added by its payment.succeeded webhook, or 200)`,
      complete,
    ];
  if (scenario === 'threeds')
    return [
      'POST /checkout/leads (new e-mail, serum offer)',
      'POST /checkout/orders/payment (gateway_id = the demo 3-D Secure gateway, challenge card, return_url, cancel_url, risk_session_id; expects 200 pending_redirect with redirect_url)',
      "sandbox: the gateway's challenge page (GET it, then its Authenticate link; expects 302 to the return URL)",
      `POST /checkout/orders/capture (expects 200 captured or already captured by the gateway's PAYMENT_SUCCEEDED webhook; 202 asked again up to ${CAPTURE_RETRIES} times)`,
      `${upsell} card, merchant-initiated, no redirect; expects 200)`,
      complete,
    ];
  return [
    'POST /checkout/leads (new e-mail, serum offer)',
    'POST /checkout/orders/payment (card; sandbox NMI gateway over HTTP; expects 200 Payment approved.)',
    `${upsell} card; expects 200)`,
    complete,
  ];
}

export function cardLine(scenario: Scenario): string {
  const short = (n: string) => `${n.slice(0, 4)}…${n.slice(-4)}`;
  if (scenario === 'extpay') return `${short(EXTPAY_CARDS.paid)} on the provider's hosted page (paid at once)`;
  if (scenario === 'threeds') return `${short(THREEDS_CARDS.challenge)} exp ${benchCardExp()} cvv 123 (3-D Secure challenge)`;
  return `${short(SANDBOX_CARDS.approve)} exp ${benchCardExp()} cvv 123`;
}

/** The summary's one-line description of the funnel. */
export const FUNNEL_LINE: Record<Scenario, string> = {
  card: 'funnel: lead → pay (card, sandbox NMI gateway over HTTP) → upsell ($9 guide, saved card) → complete; worker → webhook receiver',
  extpay: "funnel (extpay): create order → pay on the provider's hosted page (sandbox) → capture (or its webhook first) → upsell (202, settled by webhook) → complete; worker → webhook receiver",
  threeds: 'funnel (threeds): lead → pay (3-D Secure gateway: redirect) → challenge page (sandbox) → capture (or its webhook first) → upsell (saved card) → complete; worker → webhook receiver',
};
